"""Does profiling slow the C++ kernel builds it measures? In-process builds with and without dynaprof.

With one compile thread every C++ kernel is built in process (``load_pybinding``), and the
difference between a parametrized and a plain cold run is mostly those builds. This times each build
from inside the script (``causes/time_toolchain.py``) under plain ``python``, ``dynaprof run
--sampler none`` and ``dynaprof run`` (the builtin sampler at its default 1 kHz), for both variants,
each run cold (fresh ``TORCHINDUCTOR_CACHE_DIR`` and ``TMPDIR``), in shuffled order each round. The
first build carries the toolchain setup and is reported apart.

    /path/to/venv-with-transformers/bin/python benchmarks/bench_build_overhead.py --rounds 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_kernel_causes import MODELS  # noqa: E402
from bench_toolchain_order import timed_run  # noqa: E402

MODES: dict[str, list[str]] = {
    "python": [],
    "dynaprof --sampler none": ["-m", "dynaprof", "run", "-q", "--sampler", "none"],
    "dynaprof (builtin sampler)": ["-m", "dynaprof", "run", "-q"],
}


def builds(mode: str, script: list[str]) -> list[float]:
    """Wall seconds of each in-process kernel build of one cold run, in order."""
    prefix = MODES[mode] + (["-o", "RUN_DIR"] if MODES[mode] else [])
    calls, _ = timed_run(script, "1", prefix)
    return [c["wall_s"] for c in calls if c["what"] == "load_pybinding"]


def med(xs: list[float]) -> str:
    """The median, or n/a: a variant that builds one kernel or none has no later builds."""
    return f"{statistics.median(xs):.3f} s" if xs else "n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="hifigan_weight_norm", choices=sorted(MODELS))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    _, param, plain = MODELS[args.model]
    runs = [(variant, mode) for variant in ("parametrized", "plain") for mode in MODES]
    got: dict[tuple[str, str], list[list[float]]] = {r: [] for r in runs}
    print("| round | variant | mode | kernels | first build (with toolchain setup) | later builds | mean |")
    print("|---|---|---|---|---|---|---|")
    for r in range(1, args.rounds + 1):
        random.shuffle(runs)
        for variant, mode in runs:
            t = builds(mode, param if variant == "parametrized" else plain)
            got[(variant, mode)].append(t)
            rest = t[1:]
            print(f"| {r} | {variant} | {mode} | {len(t)} | {t[0] if t else 0:.2f} s | {sum(rest):.2f} s "
                  f"| {statistics.mean(rest) if rest else 0:.3f} s |", flush=True)
    print("\n| variant | mode | later builds, median of rounds | mean build, median | first build, median |")
    print("|---|---|---|---|---|")
    for variant in ("parametrized", "plain"):
        for mode in MODES:
            ts = got[(variant, mode)]
            print(f"| {variant} | {mode} | {med([sum(t[1:]) for t in ts])} "
                  f"| {med([statistics.mean(t[1:]) for t in ts if len(t) > 1])} | {med([t[0] for t in ts if t])} |")


if __name__ == "__main__":
    main()
