"""`dynaprof suite` at scale, measured in one sitting (issue #47, item 6):

* wall time of a suite of 8 small entries x 2 repeats with ``--workers 2`` against ``--workers 1``
  on the local executor (bound: at most 0.6x);
* the time to aggregate a suite of 1,000 runs of synthetic sessions (``bench_scale``'s, 10 frames
  and 1,000 samples each, saved as run folders): each run's session read and its facts derived
  (``run_folder.suite_folder.read_suite_run``, what ``suite`` does as each run comes back), then the
  per-model summaries, the kinds of cause across the suite and every report file (bound: under 10 s).

    .venv/bin/python benchmarks/bench_suite.py            # both (~3 min on 2 cores)
    .venv/bin/python benchmarks/bench_suite.py --no-runs  # the aggregation only

Each entry is a real ``torch.compile`` (eager backend) of a small function of its own, so every run
is a fresh process importing torch, compiling and writing its run folder: the cost a suite's worker
sees besides the model itself. Prints a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_scale import synthetic_session  # noqa: E402

from dynaprof.model.store import save_session  # noqa: E402
from dynaprof.model.suite import ORIGIN_DYNAPROF, SUITE_SCHEMA_VERSION, Suite, SuiteEntry, SuiteRun  # noqa: E402
from dynaprof.render.suite_report import render_suite  # noqa: E402
from dynaprof.run_folder.suite_folder import read_suite_run  # noqa: E402

ENTRY = """import torch

@torch.compile(backend="eager")
def f(x):
    for _ in range({n}):
        x = torch.sin(x) * {k} + torch.cos(x)
    return x

f(torch.ones(8))
"""


def suite_wall(folder: Path, workers: int) -> float:
    out = folder / f"out-{workers}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dynaprof", "suite", str(folder / "zoo"), "-o", str(out), "--repeat", "2",
                    "--workers", str(workers), "-q"], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def aggregate(runs: int, folder: Path) -> tuple[float, float, Suite]:
    """(seconds to read every run's session into its record, seconds to render the suite, the suite)."""
    per = 4
    models = runs // per
    sessions = [synthetic_session(10, 1000, functions=500, seed=i) for i in range(8)]
    recs = []
    for i in range(models):
        for k in range(1, per + 1):
            where = folder / f"model{i:04d}" / str(k)
            save_session(sessions[(i + k) % len(sessions)], where)
            recs.append(SuiteRun(f"model{i:04d}", k, f"model{i:04d}/{k}", 0, None, 10.0))
    start = time.perf_counter()
    for r in recs:
        read_suite_run(r, folder / r.run_dir)
    read_s = time.perf_counter() - start
    suite = Suite(SUITE_SCHEMA_VERSION, "synthetic", ORIGIN_DYNAPROF,
                  [SuiteEntry(f"model{i:04d}", "x.py") for i in range(models)], per, True, "local", 1,
                  ["dynaprof", "suite"], "", "2.13.0", "0", recs)
    start = time.perf_counter()
    files = render_suite(suite)
    render_s = time.perf_counter() - start
    assert "model0249" in str(files["summary.md"]) and all(r.measures for r in recs)
    return read_s, render_s, suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-runs", action="store_true", help="only the aggregation of synthetic runs")
    args = ap.parse_args()
    rows = []
    if not args.no_runs:
        with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
            folder = Path(tmp)
            (folder / "zoo").mkdir()
            for i in range(8):
                (folder / "zoo" / f"m{i}.py").write_text(ENTRY.format(n=2 + i, k=i + 1))
            one = suite_wall(folder, 1)
            two = suite_wall(folder, 2)
        rows.append(("8 entries x 2 repeats, --workers 1", f"{one:.1f} s", ""))
        rows.append(("8 entries x 2 repeats, --workers 2", f"{two:.1f} s", f"{two / one:.2f}x of --workers 1 "
                                                                           "(bound 0.6x)"))
    with tempfile.TemporaryDirectory(prefix="bench-suite-agg-") as tmp:
        read_s, render_s, _ = aggregate(1000, Path(tmp))
    rows.append(("read 1,000 runs' sessions into the suite (250 models x 4)", f"{read_s:.2f} s", ""))
    rows.append(("summaries, causes across the suite, every report file", f"{render_s:.2f} s", ""))
    rows.append(("aggregate 1,000 runs, in all", f"{read_s + render_s:.2f} s", "bound 10 s"))
    print(f"cores: {os.cpu_count()}")
    print("| measure | time | note |\n| --- | ---: | --- |")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")


if __name__ == "__main__":
    main()
