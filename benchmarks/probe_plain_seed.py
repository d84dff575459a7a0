"""The probe that found why the plain seed's warm compile read 1.1-1.2x under ``dynaprof run``.

Fresh processes, interleaved: plain ``python`` running the plain seed's compile N times (after a
``gc.collect()`` with ``--collect``), the same with the compile loop K frames deeper (``dK``), and
``dynaprof run`` of it with the compile windows only (``off``), every hook (``all``) or the
default sampler (``default``). Per process: the median of its warm compiles' CPU time less the
collector's time, and the collector's time per warm compile; per mode the median over processes.
``docs/performance.md`` ("Why the plain seed's ratio moved") has its figures.

    .venv/bin/python benchmarks/probe_plain_seed.py --modes py,off,all,d4 --compiles 6 --rounds 6 --collect
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^compile (\d+): cpu (\d+) gc (\d+)$", re.M)


def child(compiles: int, depth: int, collect: bool) -> None:
    sys.path.insert(0, str(ROOT / "samples"))
    import parametrized_linear as seed
    import torch

    spent = [0.0, 0.0]  # collector seconds so far, start of the running collection

    def timer(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            spent[1] = time.perf_counter()
        else:
            spent[0] += time.perf_counter() - spent[1]

    gc.callbacks.append(timer)
    args = argparse.Namespace(layers=32, width=128, backend="eager", fold=False)

    def loop() -> None:
        for i in range(compiles):
            if collect:
                gc.collect()
            before = spent[0]
            seed.compile_once(False, args, torch.device("cpu"))
            print(f"compile {i}: cpu {args.last_cpu_s * 1000:.0f} gc {(spent[0] - before) * 1000:.0f}", flush=True)

    def nest(k: int) -> None:
        loop() if k == 0 else nest(k - 1)

    nest(depth)


def command(mode: str, compiles: int, collect: bool, out: Path) -> tuple[list[str], dict[str, str]]:
    me = [str(Path(__file__).resolve()), "--child", "--compiles", str(compiles), *(["--collect"] if collect else [])]
    env = {k: v for k, v in os.environ.items() if k != "DYNAPROF_HOOKS"}
    if mode == "py" or re.fullmatch(r"d\d+", mode):
        return [sys.executable, *me, "--depth", mode[1:] if mode != "py" else "0"], env
    run = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(out)]
    if mode == "off":
        env["DYNAPROF_HOOKS"] = "none"
    if mode in ("off", "all"):
        run += ["--sampler", "none"]
    elif mode != "default":
        raise SystemExit(f"unknown mode {mode} (py, dK, off, all, default)")
    return [*run, *me, "--depth", "0"], env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--depth", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--compiles", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--collect", action="store_true", help="gc.collect() before each compile")
    ap.add_argument("--modes", default="py,off,all,d4")
    args = ap.parse_args()
    if args.child:
        child(args.compiles, args.depth, args.collect)
        return
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    less_gc: dict[str, list[float]] = {m: [] for m in modes}
    gc_ms: dict[str, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as d:
        for r in range(args.rounds):
            for mode in random.sample(modes, len(modes)):
                cmd, env = command(mode, args.compiles, args.collect, Path(d) / "run")
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
                rows = [(float(m.group(2)), float(m.group(3))) for m in ROW.finditer(proc.stdout)][1:]
                if not rows:
                    raise SystemExit(f"{mode}: no compiles\n{proc.stderr[-2000:]}")
                less_gc[mode].append(statistics.median(c - g for c, g in rows))
                gc_ms[mode].append(statistics.mean(g for _, g in rows))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    base = statistics.median(less_gc[modes[0]])
    print(f"plain seed, {args.compiles - 1} warm compiles a process{' after gc.collect()' if args.collect else ''}, "
          f"{args.rounds} processes a mode; ratio to {modes[0]}\n")
    print("| mode | warm compile less GC | ratio | GC per warm compile |")
    print("|---|---|---|---|")
    for m in modes:
        v = statistics.median(less_gc[m])
        print(f"| {m} | {v:.0f} ms | {v / base:.3f}x | {statistics.median(gc_ms[m]):.0f} ms |")


if __name__ == "__main__":
    main()
