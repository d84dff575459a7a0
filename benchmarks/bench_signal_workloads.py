"""What one 1 kHz SIGALRM (empty Python handler) costs three workloads, per signal: a tight Python
loop, a loop over a large shuffled working set, and (with ``--seed``) the seed's warm compile.

Why ``capture.signal_cost`` measures its floor on a Dynamo compile, not on a synthetic loop: on
the 2-vCPU VM the loops read 30-34 us a signal, the seed's compile 135 us (docs/performance.md).
Chunks alternate without and with the timer; CPU time of this thread; medians.

    .venv/bin/python benchmarks/bench_signal_workloads.py [--seed]
"""

from __future__ import annotations

import argparse
import random
import signal
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent))

TICKS = [0]
N = 400_000


def tick(signum: int, frame: FrameType | None) -> None:
    TICKS[0] += 1


def tight(n: int = 200_000) -> None:
    x = 0
    for i in range(n):
        x += i


def large_working_set() -> Callable[[], None]:
    objs = [{"a": i, "b": str(i), "c": [i]} for i in range(N)]
    order = list(range(N))
    random.shuffle(order)

    def run(n: int = 60_000) -> None:
        s = 0
        for j in order[:n]:
            d = objs[j]
            s += d["a"] + len(d["c"])

    return run


def timed(fn: Callable[[], object], on: bool) -> tuple[float, int]:
    TICKS[0] = 0
    if on:
        signal.signal(signal.SIGALRM, tick)
        signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    cpu = time.thread_time()
    try:
        fn()
    finally:
        cpu = time.thread_time() - cpu
        if on:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
    return cpu, TICKS[0]


def per_signal(name: str, fn: Callable[[], object], pairs: int) -> None:
    off, on, ticks = [], [], []
    for _ in range(pairs):
        off.append(timed(fn, False)[0])
        t, n = timed(fn, True)
        on.append(t)
        ticks.append(n)
    a, b, n = statistics.median(off), statistics.median(on), statistics.median(ticks)
    cost = (b - a) / n * 1e6 if n else float("nan")
    print(f"| {name} | {a * 1e3:.1f} ms | {b * 1e3:.1f} ms | {n:.0f} | {cost:.1f} us | {b / a:.3f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", action="store_true", help="also the seed's warm compile (imports torch)")
    args = ap.parse_args()
    print("| workload | no timer | 1 kHz timer | signals | per signal | ratio |\n|---|---|---|---|---|---|")
    per_signal("tight loop", tight, 25)
    per_signal("large working set", large_working_set(), 25)
    if args.seed:
        import overhead_cases

        overhead_cases.compile_cpu("seed-eager")
        per_signal("seed compile (eager)", lambda: overhead_cases.compile_cpu("seed-eager"), 5)


if __name__ == "__main__":
    main()
