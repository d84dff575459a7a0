"""How deep the script runs changes the plain seed's compile time, with no profiler at all.

CPython 3.11 keeps frames in a data stack of 16 KiB chunks and frees a chunk as soon as it empties,
so a call that oscillates across a chunk boundary maps and unmaps a chunk on every crossing. Where
that boundary falls in Dynamo's recursion depends on how much stack lies under the script:
``python script.py`` runs it on the first frame, ``dynaprof run`` under its boot frames. This
runs the plain seed's warm compiles in fresh processes of plain ``python``, with the compile loop
N extra frames deep, interleaved, and under ``dynaprof run`` (sampler off) with no hook but the
compile windows, and with every hook; with ``strace`` present, it also counts the ``munmap`` calls
of one process per row (for ``dynaprof run``: of its whole process tree), and with the default
sampler. Each compile starts after a ``gc.collect()`` (``--keep-gc``: not, so a full collection
lands in whichever compile crosses the threshold, as in a real script); the collector's time in
each compile is reported apart.

    .venv/bin/python benchmarks/bench_stack_base.py --rounds 6 --depths 0,2,4,6
    .venv/bin/python benchmarks/bench_stack_base.py --rounds 0 --hooks traced_stack,inlines   # munmaps only
    .venv/bin/python benchmarks/bench_stack_base.py --rounds 0 --depths 0 --seed-script --hooks traced_stack,inlines
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^compile (\d+): cpu ([\d.]+) ms, gc ([\d.]+) ms$", re.M)
ONLY_HOOKS = "DYNAPROF_HOOKS"  # capture/torch_hooks.py's ONLY_HOOKS_ENV
WINDOWS_ONLY = "dynaprof run, compile windows only"
EVERY_HOOK = "dynaprof run, every hook"
DEFAULT = "dynaprof run, default sampler"
ALONE = " alone"  # a row "dynaprof run, HOOK alone" (``--hooks``): that hook and the compile windows
MUNMAP = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?munmap$", re.M)


def child(compiles: int, depth: int, collect: bool) -> None:
    """In the measured process: the plain seed compiled ``compiles`` times, ``depth`` frames deep."""
    sys.path.insert(0, str(ROOT / "samples"))
    import parametrized_linear as seed
    import torch

    args = argparse.Namespace(layers=32, width=128, backend="eager", fold=False)

    def loop() -> None:
        for i in range(compiles):
            if collect:
                gc.collect()  # each compile starts from the same heap: a full collection lands in none
            seed.compile_once(False, args, torch.device("cpu"))
            print(f"compile {i}: cpu {args.last_cpu_s * 1000:.1f} ms, gc {args.last_gc_s * 1000:.1f} ms", flush=True)

    def nest(k: int) -> None:
        loop() if k == 0 else nest(k - 1)

    nest(depth)


def command(row: str, compiles: int, collect: bool, out: Path, seed_script: bool = False) -> list[str]:
    me = [str(Path(__file__).resolve()), "--child", "--compiles", str(compiles), *([] if collect else ["--keep-gc"])]
    if seed_script:  # the sample itself, its compile loop at module level: no depth, no gc.collect()
        seed = [str(ROOT / "samples" / "parametrized_linear.py"), "--no-parametrize", "--backend", "eager"]
        me, row = [*seed, "--repeat", str(compiles)], row if row.startswith("dynaprof run") else "python"
        if row == "python":
            return [sys.executable, *me]
        sampler = [] if row == DEFAULT else ["--sampler", "none"]
        return [sys.executable, "-m", "dynaprof", "run", "-q", "--force", *sampler, "-o", str(out), *me]
    if row.startswith("dynaprof run"):
        sampler = [] if row == DEFAULT else ["--sampler", "none"]
        return [sys.executable, "-m", "dynaprof", "run", "-q", "--force", *sampler, "-o", str(out), *me, "--depth", "0"]
    return [sys.executable, *me, "--depth", row.split()[-1]]


def row_env(row: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ONLY_HOOKS}
    if row == WINDOWS_ONLY:
        env[ONLY_HOOKS] = "none"  # the compile windows only
    elif row.endswith(ALONE):
        env[ONLY_HOOKS] = row[len("dynaprof run, ") : -len(ALONE)]
    return env


def measure(cmd: list[str], env: dict[str, str]) -> list[tuple[float, float]]:
    """Each compile's (CPU ms, collector ms)."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return [(float(m.group(2)), float(m.group(3))) for m in LINE.finditer(proc.stdout)]


def munmaps(cmd: list[str], env: dict[str, str]) -> int | None:
    if shutil.which("strace") is None:
        return None
    proc = subprocess.run(["strace", "-f", "-c", "-e", "trace=munmap", *cmd], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    m = MUNMAP.search(proc.stderr)
    return int(m.group(1)) if m else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--depth", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--compiles", type=int, default=6, help="compiles per process (the first is not counted)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--depths", default="0,2,4,6", help="extra frames under the compile loop, comma-separated")
    ap.add_argument("--keep-gc", action="store_true", help="no gc.collect() before each compile")
    ap.add_argument("--seed-script", action="store_true",
                    help="with --rounds 0: count the unmaps of samples/parametrized_linear.py itself")
    ap.add_argument("--hooks", default="", help="also a row per hook alone (comma-separated names, sampler off)")
    args = ap.parse_args()
    collect = not args.keep_gc
    if args.seed_script and args.rounds:
        ap.error("--seed-script counts unmaps only: give --rounds 0")
    if args.child:
        child(args.compiles, args.depth, collect)
        return
    rows = [f"python, depth {d}" for d in args.depths.split(",")] + [WINDOWS_ONLY, EVERY_HOOK, DEFAULT]
    rows += [f"dynaprof run, {h.strip()}{ALONE}" for h in args.hooks.split(",") if h.strip()]
    cpu: dict[str, list[float]] = {r: [] for r in rows}  # per process: the median warm compile
    less_gc: dict[str, list[float]] = {r: [] for r in rows}  # the same, less the collector's time
    gc_ms: dict[str, list[float]] = {r: [] for r in rows}  # the collector's mean time per warm compile
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "run"
        for r in range(args.rounds):
            for row in random.sample(rows, len(rows)):
                warm = measure(command(row, args.compiles, collect, out), row_env(row))[1:]
                cpu[row].append(statistics.median(c for c, _ in warm))
                less_gc[row].append(statistics.median(c - g for c, g in warm))
                gc_ms[row].append(statistics.mean(g for _, g in warm))
            print(f"round {r + 1}/{args.rounds} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        unmapped = {row: munmaps(command(row, args.compiles, collect, out, args.seed_script), row_env(row))
                    for row in rows}
    if args.rounds == 0:
        print(f"Plain seed, eager, {args.compiles} compiles in one process a row\n")
        print("| how the script runs | munmap calls, one process |\n|---|---|")
        for row in rows:
            print(f"| {row} | {'n/a (no strace)' if unmapped[row] is None else f'{unmapped[row]:,}'} |")
        return
    med = statistics.median
    base, base_less = med(cpu[rows[0]]), med(less_gc[rows[0]])
    print(f"Plain seed, eager, {args.compiles - 1} warm compiles per process"
          f"{' (gc.collect() before each)' if collect else ''}, {args.rounds} fresh processes per row, interleaved; "
          "CPU time of the compiling thread, median\n")
    print("| how the script runs | warm compile | ratio | less GC | ratio | GC per compile "
          "| munmap calls, one process |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        v, w, n = med(cpu[row]), med(less_gc[row]), unmapped[row]
        print(f"| {row} | {v:.0f} ms | {v / base:.2f}x | {w:.0f} ms | {w / base_less:.2f}x | {med(gc_ms[row]):.0f} ms "
              f"| {'n/a (no strace)' if n is None else f'{n:,}'} |")


if __name__ == "__main__":
    main()
