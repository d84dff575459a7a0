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

``--seed N`` runs ``dynaprof run samples/parametrized_linear.py --both --repeat 3`` N times and
reports, per run, the process wall, the script's own wall (the child, from session.json) and the
difference: what dynaprof adds after (and just before) the script, i.e. start-up, assembling the
session and writing every output. It also times ``dynaprof report`` re-rendering that folder.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
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


def one(scale: float) -> dict[str, object]:
    """Save a synthetic session, then time ``dynaprof report`` on it in a fresh process: load,
    attribution, every renderer and the atomic writes, as a user would run it."""
    from dynaprof.analysis.attribution import apply_attribution
    from dynaprof.model.store import save_session

    frames, samples = int(10_000 * scale), int(1_000_000 * scale)
    session = synthetic_session(frames, samples)
    apply_attribution(session)
    stacks = len(session.samples.stacks) if session.samples else 0
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        save_session(session, out)
        del session
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "dynaprof", "report", "-q", str(out)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        tree_peak = 0
        while proc.poll() is None:  # every process of the report (Graphviz, a DYNAPROF_JOBS=2 worker)
            tree_peak = max(tree_peak, _tree_pss_kib(proc.pid))
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(err)
        sizes = {str(p.relative_to(out)): p.stat().st_size for p in out.rglob("*") if p.is_file()}
    # the largest process exactly (ru_maxrss), or all of them together as sampled, whichever is more
    peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, tree_peak) / 1024
    return {"scale": scale, "frames": frames, "samples": samples, "stacks": stacks, "report_s": round(wall, 1),
            "peak_mib": round(peak), "session_mb": round(sizes.get("session.json", 0) / 1e6, 1),
            "flame_mb": round(sizes.get("flame-compiler.svg", 0) / 1e6, 2),
            "html_mb": round(sizes.get("report.html", 0) / 1e6, 2),
            "total_mb": round(sum(sizes.values()) / 1e6, 1)}


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
    args = ap.parse_args()
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
