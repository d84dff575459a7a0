"""What does a 1 kHz timer signal cost a compile by itself? The floor under any in-process sampler.

Warm compiles of the seed model (parametrized and plain, eager backend, ``torch._dynamo.reset()``
before each) in one process, interleaved in a shuffled order each round, timed in the compiling
thread's CPU time (kernel time for signal delivery included; steadier than wall time on a shared
machine). Modes:

* ``none``: no timer;
* ``C handler``: an ``ITIMER_REAL`` SIGALRM at 1 kHz whose handler is C and only counts
  (``benchmarks/signal_floor/sigfloor.c``, built here with the system C compiler): the kernel's
  and the VM's share, no Python code per signal;
* ``Python handler``: the same timer, an empty Python handler (Python's own signal machinery);
* ``dynaprof hooks`` / ``dynaprof 1 kHz`` / ``dynaprof 500 Hz``: ``dynaprof.profile()`` around
  the compile with its sampler off, at its default rate, and at half of it (render off).

    .venv/bin/python benchmarks/bench_signal_floor.py --rounds 7

A C walker was tried and left out of dynaprof: reading the interpreter's frame chain from a
signal handler crashed the seed within seconds (the timer signal lands on whichever thread runs
and races the interpreter pushing frames); see docs/performance.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import FrameType, ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "samples"))

sys.path.insert(0, str(ROOT / "benchmarks"))
import overhead_cases  # noqa: E402
import torch  # noqa: E402

import dynaprof  # noqa: E402


def build_floor(tmp: Path) -> ModuleType | None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("no C compiler: the C-handler mode is skipped", file=sys.stderr)
        return None
    out = tmp / ("sigfloor" + str(sysconfig.get_config_var("EXT_SUFFIX")))
    src = ROOT / "benchmarks" / "signal_floor" / "sigfloor.c"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(src), "-o", str(out)],
                   check=True)
    spec = importlib.util.spec_from_file_location("sigfloor", out)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compile_once(parametrized: bool) -> float:
    torch._dynamo.reset()
    compile_call = overhead_cases.seed_compile(parametrized, "eager")
    t = time.thread_time()
    compile_call()
    return time.thread_time() - t


def _empty(signum: int, frame: FrameType | None) -> None:
    pass


def timed(mode: str, parametrized: bool, floor: ModuleType | None, tmp: Path) -> float:
    if mode == "C handler":
        assert floor is not None
        floor.start(1000)
        try:
            return compile_once(parametrized)
        finally:
            floor.stop()
    if mode == "Python handler":
        signal.signal(signal.SIGALRM, _empty)
        signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
        try:
            return compile_once(parametrized)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
    if mode.startswith("dynaprof"):
        sampler = "none" if mode == "dynaprof hooks" else "builtin"
        rate = 500.0 if mode == "dynaprof 500 Hz" else 1000.0
        with dynaprof.profile(tmp / "run", force=True, sampler=sampler, rate=rate, render=False):  # type: ignore[arg-type]
            return compile_once(parametrized)
    return compile_once(parametrized)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dynaprof-floor-") as tmp_s:
        tmp = Path(tmp_s)
        floor = build_floor(tmp)
        modes = ["none", *(["C handler"] if floor else []), "Python handler", "dynaprof hooks", "dynaprof 1 kHz",
                 "dynaprof 500 Hz"]
        for p in (True, False):  # warm the process: imports, first compiles
            timed("dynaprof 1 kHz", p, floor, tmp)
            compile_once(p)
        got: dict[tuple[str, bool], list[float]] = {(m, p): [] for m in modes for p in (True, False)}
        for r in range(a.rounds):
            order = list(got)
            random.shuffle(order)
            for mode, p in order:
                got[(mode, p)].append(timed(mode, p, floor, tmp))
            print(f"round {r + 1}/{a.rounds}", file=sys.stderr, flush=True)
    print("| mode | parametrized compile (CPU) | ratio | plain compile (CPU) | ratio |")
    print("|---|---|---|---|---|")
    base = {p: statistics.median(got[("none", p)]) for p in (True, False)}
    for mode in modes:
        cells = []
        for p in (True, False):
            med = statistics.median(got[(mode, p)])
            cells += [f"{med * 1e3:.0f} ms", f"{med / base[p]:.3f}x"]
        print(f"| {mode} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
