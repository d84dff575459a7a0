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
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "samples" / "parametrized_linear.py"
LINE = re.compile(r"parametrize=(True|False): (\d+) ms(?: \(cpu (\d+) ms\))?")

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


def run_once(mode: str, case: str, repeat: int, tmp: Path) -> tuple[list[float], list[float], float, float]:
    """(compile wall times, compile CPU times of the compiling thread, process wall, process CPU of
    the whole process tree: dynaprof, the script, Graphviz)."""
    opts, extra = MODES[mode]
    env = dict(os.environ, **extra)
    script = [str(SEED), CASES[case], "--repeat", str(repeat), "--backend", "eager", "--device", "cpu"]
    if opts is None:
        cmd = [sys.executable, *script]
    else:
        cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(tmp / "run"), *opts, *script]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} / {case} failed:\n{proc.stderr[-2000:]}")
    if opts is not None and not (tmp / "run" / "report.html").exists():
        raise SystemExit(f"{mode} / {case}: outputs missing when dynaprof returned")
    found = list(LINE.finditer(proc.stdout))
    return ([int(m.group(2)) / 1000 for m in found], [int(m.group(3) or 0) / 1000 for m in found], wall, cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2, help="compiles per process (the 2nd and later are warm)")
    ap.add_argument("--modes", default="", help="comma-separated subset of mode names (substring match)")
    args = ap.parse_args()
    modes = [m for m in MODES if not args.modes or any(s.strip() in m for s in args.modes.split(","))]
    if "plain python" not in modes:
        modes.insert(0, "plain python")
    keys = [(m, c) for m in modes for c in CASES]
    first: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
    first_cpu: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
    warm: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
    walls: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
    cpus: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for r in range(args.rounds):
            order = keys[:]
            random.shuffle(order)
            for mode, case in order:
                times, cpu_times, wall, cpu = run_once(mode, case, args.repeat, tmp)
                first[mode, case].append(times[0])
                first_cpu[mode, case].append(cpu_times[0])
                warm[mode, case] += times[1:]
                walls[mode, case].append(wall)
                cpus[mode, case].append(cpu)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    med = statistics.median
    base = "plain python"

    def cell(table: dict[tuple[str, str], list[float]], mode: str, case: str) -> str:
        if not table[mode, case] or not table[base, case] or med(table[base, case]) <= 0:
            return "n/a | n/a"
        v, b = med(table[mode, case]), med(table[base, case])
        return f"{v:.3f} s | {v / b:.2f}x"

    print(f"seed case, eager backend, CPU; {args.rounds} rounds; every process fresh; medians; ratio to {base}\n")
    print("Compile time (the first call of the compiled model; wall, and CPU time of the compiling thread):\n")
    print("| mode | first, parametrized | ratio | first, plain | ratio | CPU, parametrized | ratio | CPU, plain "
          "| ratio | warm, parametrized | ratio | warm, plain | ratio |")
    print("|---|" + "---|" * 12)
    for mode in modes:
        cells = [cell(first, mode, "parametrized"), cell(first, mode, "plain"), cell(first_cpu, mode, "parametrized"),
                 cell(first_cpu, mode, "plain"), cell(warm, mode, "parametrized"), cell(warm, mode, "plain")]
        print(f"| {mode} | " + " | ".join(cells) + " |")
    print("\nWhole process, every output written (wall, and CPU of the whole process tree):\n")
    print("| mode | wall, parametrized | ratio | wall, plain | ratio | CPU, parametrized | ratio | CPU, plain "
          "| ratio |")
    print("|---|" + "---|" * 8)
    for mode in modes:
        cells = [cell(walls, mode, "parametrized"), cell(walls, mode, "plain"), cell(cpus, mode, "parametrized"),
                 cell(cpus, mode, "plain")]
        print(f"| {mode} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
