"""Scale: render every output of a big synthetic session; time, peak memory, sizes, growth.

The largest case is 10,000 compiled frames and 1,000,000 samples, aggregated (as capture does) into
100,000 distinct stacks 30-70 frames deep over 5,000 functions. Stacks are random walks on a fixed
call graph (each function calls one of 4 others), like real compiler stacks where a few hundred
functions recur; every stack is distinct, which is the expensive case for trees. Smaller cases
(1/8, 1/4, 1/2) show how cost grows.
Each case runs in a fresh subprocess so its peak memory is its own: the larger of the biggest
process's peak RSS and the sampled proportional set size of all the report's processes together.

    .venv/bin/python benchmarks/bench_scale.py            # all sizes, Markdown table
    .venv/bin/python benchmarks/bench_scale.py --one 1.0  # one case (used by the driver)
    .venv/bin/python benchmarks/bench_scale.py --seed 3   # render cost after the script, seed case
    .venv/bin/python benchmarks/bench_scale.py --baseline-tree /tmp/base213 --rounds 3
                                                          # this tree against another, side by side
                                                          # (each renders the session its own code saved)

``--seed N`` runs ``dynaprof run samples/parametrized_linear.py --both --repeat 3`` N times and
reports, per run, the process wall, the script's own wall (the child, from session.json) and the
difference: what dynaprof adds after (and just before) the script, i.e. start-up, assembling the
session and writing every output. It also times ``dynaprof report`` re-rendering that folder.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.model import (  # noqa: E402
    SCHEMA_VERSION,
    Attempt,
    CaptureInfo,
    CompiledFrame,
    FunctionRef,
    GuardStats,
    RunInfo,
    Samples,
    Session,
    Span,
    Stack,
)

SITE = "/venv/lib/python3.11/site-packages/"
MODULES = ["torch/_dynamo/symbolic_convert.py", "torch/_dynamo/variables/builder.py", "torch/_dynamo/guards.py",
           "torch/_subclasses/fake_tensor.py", "torch/_functorch/aot_autograd.py", "torch/_inductor/scheduler.py",
           "torch/_dynamo/variables/user_defined.py", "torch/_dynamo/convert_frame.py"]


def synthetic_session(frames: int, samples: int, stacks_per_frame: int = 10, functions: int = 5000,
                      seed: int = 0) -> Session:
    rng = random.Random(seed)
    funcs = [FunctionRef(f"Class{i % 97}.method_{i}", SITE + MODULES[i % len(MODULES)], 10 + i, "python")
             for i in range(functions)]
    traced = [FunctionRef(f"user_fn_{i}", f"/work/model/layer_{i % 50}.py", 5 + i, "traced") for i in range(500)]
    funcs += traced
    root = [0, 1, 2]
    callees = [[rng.randrange(3, functions) for _ in range(4)] for _ in range(functions)]
    all_stacks: list[Stack] = []
    fr: list[CompiledFrame] = []
    per_stack = max(1, samples // (frames * stacks_per_frame))
    for n in range(frames):
        key = f"{n % 997}/{n // 997}"
        t = n * 0.5
        fr.append(CompiledFrame(
            key=key, compile_id=key, trace_id=key, generation=0, name=f"forward_{n % 300}",
            filename=f"/work/model/layer_{n % 50}.py", lineno=10 + n % 300, thread=1, thread_name="MainThread",
            start_s=t, compile_time_s=0.4, guard_count=100 + n % 500, guards=GuardStats(count=100 + n % 500),
            phases={"entire_frame_compile": 0.4, "bytecode_tracing": 0.3, "build_guards": 0.05},
            spans=[Span("entire_frame_compile", t, 0.4, 1), Span("bytecode_tracing", t + 0.01, 0.3, 1)],
            attempts=[Attempt(0, t, 0.4)], inlined_calls=30, ir_count=400,
        ))
        trunk = [*root, rng.randrange(3, functions)]
        for _ in range(20):
            trunk.append(rng.choice(callees[trunk[-1]]))
        for _ in range(stacks_per_frame):
            comp = list(trunk)
            for _ in range(rng.randint(10, 50)):
                comp.append(rng.choice(callees[comp[-1]]))
            tr = [functions + rng.randrange(500) for _ in range(rng.randint(1, 8))]
            all_stacks.append(Stack(key, 0, 1, comp, tr, per_stack, per_stack / 1000))
    count = sum(s.samples for s in all_stacks)
    run = RunInfo(["dynaprof", "run", "big.py"], "big.py", ["big.py"], "/work", "3.11.7", "2.13.0", "0.1.0",
                  "Linux", "host", "cpu", "2026-11-30T00:00:00+00:00", frames * 0.5, 0, "exited", True)
    return Session(SCHEMA_VERSION, run, CaptureInfo(sampler="builtin", requested_hz=1000.0), fr, funcs,
                   Samples("builtin", 1000.0, 1000.0, count, count / 1000, 0, all_stacks))


def _tree_pss_kib(pid: int) -> int:
    """Proportional set size (KiB) of ``pid`` and its descendants: pages shared between them
    (a forked worker's) count once in all."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                total += next((int(line.split()[1]) for line in fh if line.startswith("Pss:")), 0)
            with open(f"/proc/{p}/task/{p}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            pass
    return total


def report_once(folder: Path, tree: Path = ROOT) -> dict[str, float]:
    """``dynaprof report -q folder`` with the code of ``tree``, in a fresh process: wall time, the
    CPU time of the process and its waited-for children, and peak memory (MiB): the larger of the
    process' peak RSS and the sampled proportional set size of all its processes together."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "dynaprof", "report", "-q", str(folder)], cwd=tree, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tree_peak = 0
    while True:  # every process of the report (Graphviz too)
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        tree_peak = max(tree_peak, _tree_pss_kib(proc.pid))
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: dynaprof report exited {proc.returncode}: {err}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mib": max(usage.ru_maxrss, tree_peak) / 1024}


def saved_case(scale: float, out: Path) -> int:
    """Write the synthetic session of ``scale`` (10,000 frames x ``scale``) to ``out``; its stacks."""
    from dynaprof.analysis.attribution import apply_attribution
    from dynaprof.model.store import save_session

    session = synthetic_session(int(10_000 * scale), int(1_000_000 * scale))
    apply_attribution(session)
    save_session(session, out)
    return len(session.samples.stacks) if session.samples else 0


def one(scale: float) -> dict[str, object]:
    """Save a synthetic session, then time ``dynaprof report`` on it in a fresh process: load,
    attribution, every renderer and the atomic writes, as a user would run it."""
    frames, samples = int(10_000 * scale), int(1_000_000 * scale)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        stacks = saved_case(scale, out)
        measured = report_once(out)
        sizes = {str(p.relative_to(out)): p.stat().st_size for p in out.rglob("*") if p.is_file()}
    return {"scale": scale, "frames": frames, "samples": samples, "stacks": stacks,
            "report_s": round(measured["wall_s"], 1), "peak_mib": round(measured["peak_mib"]),
            "session_mb": round(sizes.get("session.json", 0) / 1e6, 1),
            "flame_mb": round(sizes.get("flame-compiler.svg", 0) / 1e6, 2),
            "html_mb": round(sizes.get("report.html", 0) / 1e6, 2),
            "total_mb": round(sum(sizes.values()) / 1e6, 1)}


SAVE_CODE = """\
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from bench_scale import synthetic_session
from dynaprof.analysis.attribution import apply_attribution
from dynaprof.model.store import save_session
scale = float(sys.argv[2])
session = synthetic_session(int(10_000 * scale), int(1_000_000 * scale))
apply_attribution(session)
save_session(session, Path(sys.argv[3]))
"""


def saved_by(tree: Path, scale: float, out: Path) -> None:
    """The synthetic session of ``scale`` made and saved by ``tree``'s own code (its
    ``benchmarks/bench_scale.py`` generator, attribution and writer, in a subprocess), so a tree
    that reads only older schemas gets a session it can read: same seed, same sizes."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-c", SAVE_CODE, str(tree), str(scale), str(out)], cwd=tree, env=env, check=True)


def session_facts(folder: Path) -> dict[str, object]:
    """What must be the same in two trees' saved sessions for their reports to do the same work:
    the counts, and a digest of every frame's key and times, every function and every stack."""
    import hashlib

    data = json.loads((folder / "session.json").read_text())
    samples = data["samples"]
    digest = hashlib.sha256()
    for f in data["frames"]:
        digest.update(repr((f["key"], f["start_s"], f["compile_time_s"], f["thread"])).encode())
    for fn in data["functions"]:
        digest.update(repr((fn["name"], fn["filename"], fn["lineno"], fn["kind"])).encode())
    for s in samples["stacks"]:
        digest.update(repr((s["frame"], s["attempt"], s["thread"], s["compiler"], s["traced"], s["samples"],
                            s["seconds"])).encode())
    distinct = {(s["frame"], s["attempt"], s["thread"], tuple(s["compiler"]), tuple(s["traced"]))
                for s in samples["stacks"]}
    return {"schema": data["schema_version"], "frames": len(data["frames"]), "functions": len(data["functions"]),
            "samples": samples["count"], "stacks": len(samples["stacks"]), "distinct stacks": len(distinct),
            "digest": digest.hexdigest()[:16], "MB": round((folder / "session.json").stat().st_size / 1e6, 1)}


def side_by_side(scale: float, baseline: Path, rounds: int) -> None:
    """``dynaprof report`` of the synthetic session with this tree and with ``baseline`` (another
    checkout, e.g. the issue's tree), alternating which goes first, each on a fresh copy of its
    folder (so neither finds the other's outputs); one line per run, then the medians and ratios.

    Each tree renders the session saved by its own code (``saved_by``): an older tree refuses a
    newer schema. The two sessions hold the same frames, functions and stacks (checked, digest
    included, before anything is timed); the newer schema adds fields, so the work is the same."""
    trees = {"this tree": ROOT, "baseline": baseline.resolve()}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as d:
        saved = {name: Path(d) / f"saved-{n}" for n, name in enumerate(trees)}
        for name, tree in trees.items():
            saved_by(tree, scale, saved[name])
        facts = {name: session_facts(saved[name]) for name in trees}
        for name, f in facts.items():
            print(f"{name} session: " + ", ".join(f"{k} {v}" for k, v in f.items()), file=sys.stderr)
        differ = [k for k in ("frames", "functions", "samples", "stacks", "distinct stacks", "digest")
                if facts["this tree"][k] != facts["baseline"][k]]
        if differ:
            raise SystemExit(f"the two sessions differ in {', '.join(differ)}: not a like-for-like measure")
        for r in range(rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for name in order:
                folder = Path(d) / f"run-{r}-{name.replace(' ', '-')}"
                shutil.copytree(saved[name], folder)
                loads.append(os.getloadavg()[0])
                m = report_once(folder, trees[name])
                runs[name].append(m)
                print(f"round {r + 1} {name}: {m['wall_s']:.1f} s wall, {m['cpu_s']:.1f} s CPU, "
                      f"{m['peak_mib']:.0f} MiB (load {loads[-1]:.1f})", file=sys.stderr)
                shutil.rmtree(folder)
    loads.append(os.getloadavg()[0])
    med = {name: {k: statistics.median(m[k] for m in ms) for k in ms[0]} for name, ms in runs.items()}
    f = facts["this tree"]
    print(f"{f['frames']:,} frames, {f['samples']:,} samples, {f['distinct stacks']:,} distinct stacks "
          f"(digest {f['digest']}); session.json: this tree {f['MB']} MB (schema {f['schema']}), "
          f"baseline {facts['baseline']['MB']} MB (schema {facts['baseline']['schema']}); "
          f"load average (1 min) {min(loads):.1f}-{max(loads):.1f}\n")
    print("| tree | wall (median) | CPU, process + children (median) | peak memory (max) | wall, rounds "
          "| CPU, rounds |")
    print("|---|---|---|---|---|---|")
    for name, m in med.items():
        walls = ", ".join(f"{x['wall_s']:.1f}" for x in runs[name])
        cpus = ", ".join(f"{x['cpu_s']:.1f}" for x in runs[name])
        peak = max(x["peak_mib"] for x in runs[name])
        print(f"| {name} | {m['wall_s']:.1f} s | {m['cpu_s']:.1f} s | {peak:.0f} MiB | {walls} s | {cpus} s |")
    print(f"\nbaseline / this tree: wall {med['baseline']['wall_s'] / med['this tree']['wall_s']:.2f}x, "
          f"CPU {med['baseline']['cpu_s'] / med['this tree']['cpu_s']:.2f}x")


def seed(rounds: int) -> None:
    """Time what `dynaprof run` costs around the seed script (start-up, assembly, rendering)."""
    rows = []
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "seed"
        for _ in range(rounds):
            cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(out),
                   "samples/parametrized_linear.py", "--both", "--repeat", "3"]
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
            wall = time.perf_counter() - t0
            child = json.loads((out / "session.json").read_text())["run"]["wall_s"]
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "dynaprof", "report", "-q", str(out)], cwd=ROOT, check=True,
                           capture_output=True)
            report = time.perf_counter() - t0
            rows.append((wall, child, wall - child, report))
            print(f"process {wall:.2f} s, script {child:.2f} s, around it {wall - child:.2f} s, "
                  f"`dynaprof report` {report:.2f} s", file=sys.stderr)
    med = [sorted(col)[len(col) // 2] for col in zip(*rows, strict=True)]
    print(json.dumps({"process_s": round(med[0], 2), "script_s": round(med[1], 2), "around_s": round(med[2], 2),
                      "ratio": round(med[0] / med[1], 3), "report_s": round(med[3], 2)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", type=float, help="run one scale in this process and print JSON")
    ap.add_argument("--scales", default="0.125,0.25,0.5,1.0")
    ap.add_argument("--seed", type=int, metavar="N", help="time N seed-case runs instead (see above)")
    ap.add_argument("--baseline-tree", type=Path, metavar="DIR",
                    help="time this tree and DIR (another checkout) side by side, each on the synthetic "
                         "session its own code saved (checked to hold the same frames and stacks)")
    ap.add_argument("--scale", type=float, default=1.0, help="with --baseline-tree: the case (default 1.0)")
    ap.add_argument("--rounds", type=int, default=3, help="with --baseline-tree: runs of each tree (default 3)")
    args = ap.parse_args()
    if args.baseline_tree is not None:
        side_by_side(args.scale, args.baseline_tree, args.rounds)
        return
    if args.seed is not None:
        seed(args.seed)
        return
    if args.one is not None:
        print(json.dumps(one(args.one)))
        return
    rows = []
    for scale in (float(x) for x in args.scales.split(",")):
        cmd = [sys.executable, __file__, "--one", str(scale)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"scale {scale} done", file=sys.stderr)
    print("| frames | samples | distinct stacks | `dynaprof report` wall | peak memory | session.json "
          "| flame-compiler.svg | report.html | all outputs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['frames']:,} | {r['samples']:,} | {r['stacks']:,} | {r['report_s']} s | {r['peak_mib']} MiB "
              f"| {r['session_mb']} MB | {r['flame_mb']} MB | {r['html_mb']} MB | {r['total_mb']} MB |")
    big, small = rows[-1], rows[0]
    growth = float(big["report_s"]) / max(1e-9, float(small["report_s"]))  # type: ignore[arg-type]
    mem = float(big["peak_mib"]) / max(1e-9, float(small["peak_mib"]))  # type: ignore[arg-type]
    print(f"\ninput grew {float(big['scale']) / float(small['scale']):.0f}x, time grew {growth:.1f}x, "
          f"peak memory {mem:.1f}x")


if __name__ == "__main__":
    main()
