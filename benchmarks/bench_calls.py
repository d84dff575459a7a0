"""Cost of counting calls per compiled entry (``CompiledFrame.calls``) in steady state.

A loop of ``--calls`` (10,000) calls to a small compiled function, timed inside the script after
its compile and a warm-up, run as ``python loop.py`` and as ``dynaprof run --sampler none loop.py``
in alternating rounds; prints each side's median loop time and the overhead. The script writes its
time to the file named by ``DYNAPROF_BENCH_OUT``, so its stdout is the same both ways (checked).
``--in-process`` also times, in one process, a function compiled inside a ``dynaprof.profile()``
block (its graph carries the counter, which goes on counting after the block) against the same
function compiled outside one, alternating: the counter's own cost without process-to-process
noise. docs/performance.md keeps the figures.

    .venv/bin/python benchmarks/bench_calls.py --rounds 10
    .venv/bin/python benchmarks/bench_calls.py --rounds 10 --backend inductor
    .venv/bin/python benchmarks/bench_calls.py --rounds 10 --in-process
    .venv/bin/python benchmarks/bench_calls.py --rounds 10 --in-process --time-calls
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LOOP = textwrap.dedent("""\
    import os, sys, time
    import torch

    @torch.compile(backend=sys.argv[1], dynamic=False)
    def step(x):
        return x * 2 + 1

    x = torch.ones(8)
    for _ in range(100):  # compile and warm up
        step(x)
    n = int(sys.argv[2])
    t = time.perf_counter()
    for _ in range(n):
        y = step(x)
    elapsed = time.perf_counter() - t
    print(float(y.sum()))
    with open(os.environ["DYNAPROF_BENCH_OUT"], "w") as f:
        f.write(repr(elapsed))
""")


def _one(cmd: list[str], cwd: Path, out: Path) -> tuple[float, str]:
    env = {**os.environ, "DYNAPROF_BENCH_OUT": str(out), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return float(out.read_text()), proc.stdout


def in_process(rounds: int, calls: int, backend: str, time_calls: bool) -> None:
    import time

    import torch

    sys.path.insert(0, str(ROOT))
    import dynaprof

    def fresh() -> object:
        ns: dict[str, object] = {"torch": torch}
        exec(compile("def step(x):\n    return x * 2 + 1\n", f"<step{len(made)}>", "exec"), ns)
        made.append(ns["step"])
        return torch.compile(ns["step"], backend=backend, dynamic=False)

    made: list[object] = []
    x = torch.ones(8)
    plain = fresh()
    plain(x)  # type: ignore[operator]
    with tempfile.TemporaryDirectory() as tmp, dynaprof.profile(Path(tmp) / "run", render=False, sampler="none",
                                                                 time_calls=time_calls) as p:
        counted = fresh()
        counted(x)  # type: ignore[operator]
    assert p.session.frames[0].calls == 1

    def loop(f: object) -> float:
        t = time.perf_counter()
        for _ in range(calls):
            f(x)  # type: ignore[operator]
        return time.perf_counter() - t

    for f in (plain, counted):
        loop(f)  # warm up
    a, b = [], []
    for _ in range(rounds):
        a.append(loop(plain))
        b.append(loop(counted))
    ma, mb = statistics.median(a), statistics.median(b)
    what = "counted and timed (time_calls)" if time_calls else "counted"
    print(f"\nin one process, backend {backend}, {calls:,} calls, median of {rounds} alternating rounds: {what}")
    print(f"not counted: {ma * 1e3:.1f} ms ({ma / calls * 1e6:.2f} us/call)")
    print(f"counted:     {mb * 1e3:.1f} ms ({mb / calls * 1e6:.2f} us/call)")
    print(f"overhead:    {(mb / ma - 1) * 100:+.2f}%")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--backend", default="eager")
    ap.add_argument("--in-process", action="store_true", help="only the in-process comparison")
    ap.add_argument("--time-calls", action="store_true", help="in-process: also time each call")
    a = ap.parse_args()
    if a.in_process:
        in_process(a.rounds, a.calls, a.backend, a.time_calls)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "loop.py").write_text(LOOP)
        args = ["loop.py", a.backend, str(a.calls)]
        plain: list[float] = []
        profiled: list[float] = []
        for i in range(a.rounds):
            t_plain, out_plain = _one([sys.executable, *args], d, d / "t")
            run_dir = d / f"run{i}"
            t_prof, out_prof = _one([sys.executable, "-m", "dynaprof", "run", "-o", str(run_dir), "--quiet",
                                     "--sampler", "none", *args], d, d / "t")
            if out_plain != out_prof:
                raise SystemExit(f"stdout differs: {out_plain!r} vs {out_prof!r}")
            plain.append(t_plain)
            profiled.append(t_prof)
            print(f"round {i + 1}: python {t_plain * 1e3:.1f} ms, dynaprof run {t_prof * 1e3:.1f} ms", flush=True)
        sys.path.insert(0, str(ROOT))
        from dynaprof.model.store import load_session

        calls = [f.calls for f in load_session(d / f"run{a.rounds - 1}").frames]
    mp, md = statistics.median(plain), statistics.median(profiled)
    print(f"\nbackend {a.backend}, {a.calls:,} calls, median of {a.rounds} alternating rounds")
    print(f"python:       {mp * 1e3:.1f} ms ({mp / a.calls * 1e6:.2f} us/call)")
    print(f"dynaprof run: {md * 1e3:.1f} ms ({md / a.calls * 1e6:.2f} us/call)")
    print(f"overhead:     {(md / mp - 1) * 100:+.2f}%   (calls counted: {calls})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
