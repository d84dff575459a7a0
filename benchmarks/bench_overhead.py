"""Overhead of dynaprof on the seed case, every mode measured side by side in one run.

Each round runs, in a shuffled order, plain ``python samples/parametrized_linear.py`` and the
same script under each dynaprof mode. The script itself prints the wall time of each first call
(the compile), so every mode is timed by the same code. Compiles after the first in a process are
"warm" (no one-time lazy imports); both are reported. Prints a Markdown table of medians and
ratios to plain.

    .venv/bin/python benchmarks/bench_overhead.py --rounds 5
"""

from __future__ import annotations

import argparse
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
SEED = ROOT / "samples" / "parametrized_linear.py"
LINE = re.compile(r"parametrize=(True|False): (\d+) ms")

MODES: dict[str, list[str]] = {
    "plain python": [],
    "dynaprof, sampling off": ["--sampler", "none"],
    "dynaprof, default (builtin 1 kHz)": [],
    "dynaprof, builtin 250 Hz": ["--rate", "250"],
    "dynaprof, py-spy 100 Hz": ["--sampler", "py-spy"],
    "dynaprof --cprofile": ["--cprofile", "--sampler", "none"],
    "TORCH_COMPILE_CPROFILE=1 (torch's own)": [],
}


def run_mode(mode: str, script_args: list[str], tmp: Path) -> tuple[dict[str, list[float]], float]:
    env = dict(os.environ)
    if mode.startswith("plain") or mode.startswith("TORCH_COMPILE_CPROFILE"):
        if mode.startswith("TORCH_COMPILE_CPROFILE"):
            env["TORCH_COMPILE_CPROFILE"] = "1"
        cmd = [sys.executable, str(SEED), *script_args]
    else:
        cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(tmp / "run"), *MODES[mode],
               str(SEED), *script_args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{proc.stderr[-2000:]}")
    times: dict[str, list[float]] = {"True": [], "False": []}
    for m in LINE.finditer(proc.stdout):
        times[m.group(1)].append(int(m.group(2)) / 1000)
    return times, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3, help="compiles of each kind per process")
    ap.add_argument("--modes", default="", help="comma-separated subset of mode names (substring match)")
    args = ap.parse_args()
    modes = [m for m in MODES if not args.modes or any(s.strip() in m for s in args.modes.split(","))]
    script_args = ["--both", "--repeat", str(args.repeat)]
    first: dict[str, dict[str, list[float]]] = {m: {"True": [], "False": []} for m in modes}
    warm: dict[str, dict[str, list[float]]] = {m: {"True": [], "False": []} for m in modes}
    walls: dict[str, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for r in range(args.rounds):
            order = modes[:]
            random.shuffle(order)
            for mode in order:
                times, wall = run_mode(mode, script_args, tmp)
                walls[mode].append(wall)
                for k in ("True", "False"):
                    first[mode][k].append(times[k][0])
                    warm[mode][k] += times[k][1:]
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    base = modes[0]
    med = statistics.median
    print(f"seed case, eager backend, CPU; {args.rounds} rounds x {args.repeat} compiles of each kind per "
          f"process; medians; ratio to {base}\n")
    print("| mode | warm compile p=True | ratio | warm compile p=False | ratio | first compile p=True | ratio "
          "| process wall | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mode in modes:
        wt, wf, ft, wall = med(warm[mode]["True"]), med(warm[mode]["False"]), med(first[mode]["True"]), med(walls[mode])
        bt, bf, bft, bw = (med(warm[base]["True"]), med(warm[base]["False"]), med(first[base]["True"]),
                           med(walls[base]))
        print(f"| {mode} | {wt:.3f} s | {wt / bt:.2f}x | {wf:.3f} s | {wf / bf:.2f}x | {ft:.3f} s | {ft / bft:.2f}x "
              f"| {wall:.1f} s | {wall / bw:.2f}x |")


if __name__ == "__main__":
    main()
