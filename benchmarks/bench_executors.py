"""What each executor costs on top of the runs: the engine's start, and the wall time of 4 tiny
runs (a ``torch.compile(backend="eager")`` of a small function, each a fresh ``dynaprof run`` with
cold caches), 2 at a time, through ``executors.run_all`` on each engine, against the local pool.

* ``local``: the thread pool (``--executor local --workers 2``);
* ``slurm``: a one-node Slurm started here (``tests/e2e/slurm_cluster.py``: munged, slurmctld,
  slurmd; needs root and Debian's ``slurm-wlm munge``), a submitit job array;
* ``ray``: ``ray.init(num_cpus=2)`` here, the run folders back through the object store;
  ``ray-shared-fs``: the same cluster, the runs writing in place.

Engine start is what a suite waits before its first run is submitted (Slurm: the daemons up and the
node idle, then submitit's executor; Ray: ``ray.init``). A run is ``TaskResult.wall_s``, the
``dynaprof run`` process alone, as the worker saw it. Outside the runs, per run: the worker time of
the batch not spent in a run, (wall x 2 workers - the runs' walls) / 4: submitting, starting a job
or task, returning the result (and packing it), and a slot left idle at the end; its difference to
the local pool's is the engine's overhead per run. It subtracts each run's own time, so it is far
less noisy than the walls on a shared machine.

    .venv/bin/python benchmarks/bench_executors.py [--engines local slurm ray ray-shared-fs] [--rounds 3]

docs/suite.md ("## Executors") keeps the table.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.executors import EngineOptions, make_engine, run_all  # noqa: E402
from dynaprof.executors.run_task import RunTask, TaskResult  # noqa: E402

RUNS = 4
WORKERS = 2
TINY = """import sys
import torch

def f(x):
    return torch.sin(x) + x * 2

print(sys.argv[1], float(torch.compile(f, backend="eager")(torch.ones(4)).sum()))
"""
ENGINES = ("local", "slurm", "ray", "ray-shared-fs")


def tasks(tmp: Path, label: str) -> list[RunTask]:
    script = tmp / "tiny.py"
    script.write_text(TINY)
    return [RunTask(f"tiny{i}/1", str(tmp / label / f"tiny{i}" / "1"), [str(script), f"tiny{i}"],
                    ["--sampler", "none", "--exports", "none"], cwd=str(tmp)) for i in range(RUNS)]


def run_batch(engine: Any, batch: list[RunTask]) -> tuple[float, list[TaskResult]]:
    results: list[TaskResult] = []
    start = time.perf_counter()
    try:
        run_all(engine, batch, results.append)
    finally:
        engine.close()
    took = time.perf_counter() - start
    dirs = {t.key: Path(t.run_dir) for t in batch}
    bad = [r for r in results if r.exit_status != 0 or not (dirs[r.key] / "session.json").is_file()]
    if len(results) != len(batch) or bad:
        raise SystemExit(f"runs failed: {bad or results}")
    return took, results


@contextlib.contextmanager
def slurm_up() -> Iterator[tuple[float, Any]]:
    from tests.e2e import slurm_cluster

    start = time.perf_counter()
    with slurm_cluster.start() as cluster:
        if isinstance(cluster, str):
            raise SystemExit(f"no Slurm here: {cluster}")
        os.environ["SLURM_CONF"] = str(cluster.conf)
        yield time.perf_counter() - start, cluster


def measure(name: str, tmp: Path, label: str) -> tuple[float, float, list[TaskResult]]:
    """(engine start, wall of the 4 runs, their results) for one engine already up where it needs one."""
    start = time.perf_counter()
    if name == "local":
        engine = make_engine(EngineOptions("local", WORKERS))
    elif name == "slurm":
        engine = make_engine(EngineOptions("slurm", WORKERS, slurm_folder=str(tmp / label / ".submitit"),
                                           slurm_partition="debug", timeout_min=60))
    else:
        engine = make_engine(EngineOptions("ray", WORKERS, shared_fs=name == "ray-shared-fs"))
    made = time.perf_counter() - start
    took, results = run_batch(engine, tasks(tmp, label))
    return made, took, results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    ap.add_argument("--rounds", type=int, default=3, help="batches per engine, interleaved (default 3)")
    args = ap.parse_args()
    names = ["local", *[e for e in args.engines if e != "local"]]
    walls: dict[str, list[float]] = {n: [] for n in names}
    runs: dict[str, list[float]] = {n: [] for n in names}
    starts: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-executors-") as tmp_s, contextlib.ExitStack() as stack:
        tmp = Path(tmp_s)
        if "slurm" in names:
            up, _ = stack.enter_context(slurm_up())
            starts["slurm"] = up
        if any(n.startswith("ray") for n in names):
            import ray

            t0 = time.perf_counter()
            ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False)
            stack.callback(ray.shutdown)
            starts["ray"] = starts["ray-shared-fs"] = time.perf_counter() - t0
        for r in range(args.rounds):
            for name in names:
                made, took, results = measure(name, tmp, f"{name}-{r}")
                starts[name] = starts.get(name, 0.0) + (made if r == 0 else 0.0)
                walls[name].append(took)
                runs[name].extend(r.wall_s or 0.0 for r in results)
                print(f"round {r + 1}: {name}: {took:.2f} s for {RUNS} runs", file=sys.stderr)
    load = os.getloadavg()[0]
    outside = {n: statistics.median(outside_runs(walls[n], runs[n])) for n in names}
    print(f"{RUNS} tiny runs, {WORKERS} at a time, {args.rounds} rounds (medians over rounds); {os.cpu_count()} "
          f"cores, load average {load:.1f} at the end\n")
    print("| engine | engine start | wall, 4 runs | mean run | outside the runs, per run | overhead per run vs local |")
    print("|---|---|---|---|---|---|")
    for name in names:
        wall = statistics.median(walls[name])
        over = "—" if name == "local" else f"{outside[name] - outside['local']:+.2f} s"
        mean_run = statistics.mean(runs[name])
        print(f"| {name} | {starts.get(name, 0.0):.2f} s | {wall:.2f} s | {mean_run:.2f} s | {outside[name]:.2f} s "
              f"| {over} |")


def outside_runs(walls: list[float], runs: list[float]) -> list[float]:
    """Per round: the batch's worker time not spent in a run, per run."""
    return [(wall * WORKERS - sum(runs[i * RUNS:(i + 1) * RUNS])) / RUNS for i, wall in enumerate(walls)]


if __name__ == "__main__":
    main()
