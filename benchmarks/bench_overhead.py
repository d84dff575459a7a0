"""Overhead of dynaprof on the seed case, every mode measured side by side in one run.

Each round runs, in a shuffled order, plain ``python samples/parametrized_linear.py`` and the same
script under each dynaprof mode, once for the parametrized model and once for the plain one, each
in a fresh process (so both compiles are the first in their process, lazy imports included). The
script prints the wall time of each first call (the compile), so every mode is timed by the same
code; ``--repeat 2`` adds a warm compile after a ``torch._dynamo.reset()``. Process wall time is
measured around the whole command: for dynaprof it includes writing every output, which exist
when the command returns. Prints a Markdown table of medians and ratios to plain python.

    .venv/bin/python benchmarks/bench_overhead.py --rounds 5
    .venv/bin/python benchmarks/bench_overhead.py --rounds 3 --modes "plain,default,legacy"
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

#: mode -> (dynaprof run options or None for plain python, extra environment)
MODES: dict[str, tuple[list[str] | None, dict[str, str]]] = {
    "plain python": (None, {}),
    "dynaprof, sampling off": (["--sampler", "none"], {}),
    "dynaprof, default (builtin 1 kHz)": ([], {}),
    "dynaprof, builtin 1 kHz, first version's walker": ([], {"DYNAPROF_LEGACY_WALKER": "1"}),
    "dynaprof, builtin 250 Hz": (["--rate", "250"], {}),
    "dynaprof, py-spy 100 Hz": (["--sampler", "py-spy"], {}),
    "dynaprof --cprofile": (["--cprofile", "--sampler", "none"], {}),
    "TORCH_COMPILE_CPROFILE=1 (torch's own)": (None, {"TORCH_COMPILE_CPROFILE": "1"}),
}
CASES = {"parametrized": "--parametrize", "plain": "--no-parametrize"}


def run_once(mode: str, case: str, repeat: int, tmp: Path) -> tuple[list[float], float]:
    opts, extra = MODES[mode]
    env = dict(os.environ, **extra)
    script = [str(SEED), CASES[case], "--repeat", str(repeat), "--backend", "eager", "--device", "cpu"]
    if opts is None:
        cmd = [sys.executable, *script]
    else:
        cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(tmp / "run"), *opts, *script]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{mode} / {case} failed:\n{proc.stderr[-2000:]}")
    if opts is not None and not (tmp / "run" / "report.html").exists():
        raise SystemExit(f"{mode} / {case}: outputs missing when dynaprof returned")
    return [int(m.group(2)) / 1000 for m in LINE.finditer(proc.stdout)], wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2, help="compiles per process (the 2nd and later are warm)")
    ap.add_argument("--modes", default="", help="comma-separated subset of mode names (substring match)")
    args = ap.parse_args()
    modes = [m for m in MODES if not args.modes or any(s.strip() in m for s in args.modes.split(","))]
    if "plain python" not in modes:
        modes.insert(0, "plain python")
    first: dict[tuple[str, str], list[float]] = {(m, c): [] for m in modes for c in CASES}
    warm: dict[tuple[str, str], list[float]] = {(m, c): [] for m in modes for c in CASES}
    walls: dict[tuple[str, str], list[float]] = {(m, c): [] for m in modes for c in CASES}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for r in range(args.rounds):
            order = [(m, c) for m in modes for c in CASES]
            random.shuffle(order)
            for mode, case in order:
                times, wall = run_once(mode, case, args.repeat, tmp)
                first[mode, case].append(times[0])
                warm[mode, case] += times[1:]
                walls[mode, case].append(wall)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    med = statistics.median
    base = "plain python"

    def cell(table: dict[tuple[str, str], list[float]], mode: str, case: str, unit: str = "s") -> str:
        if not table[mode, case] or not table[base, case]:
            return "n/a | n/a"
        v, b = med(table[mode, case]), med(table[base, case])
        return f"{v:.3f} {unit} | {v / b:.2f}x" if unit == "s" else f"{v:.1f} s | {v / b:.2f}x"

    print(f"seed case, eager backend, CPU; {args.rounds} rounds; every process fresh; medians; "
          f"ratio to {base}\n")
    print("| mode | first compile, parametrized | ratio | first compile, plain | ratio "
          "| warm compile, parametrized | ratio | warm compile, plain | ratio "
          "| process wall, parametrized | ratio | process wall, plain | ratio |")
    print("|---|" + "---|" * 12)
    for mode in modes:
        cells = [cell(first, mode, "parametrized"), cell(first, mode, "plain"),
                 cell(warm, mode, "parametrized"), cell(warm, mode, "plain"),
                 cell(walls, mode, "parametrized", "wall"), cell(walls, mode, "plain", "wall")]
        print(f"| {mode} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
