"""The garbage collector's long pauses in a script: run it as ``python script.py`` would, and list
every collection over a threshold (generation, seconds, objects collected) on stderr.

A full collection runs in C: no signal handler runs during it, so a sampling profiler's next sample
carries its whole time to wherever the Python code stands when it ends. This says whether a
compile holds such pauses (``docs/causes.md``, torchao's share).

    .venv/bin/python benchmarks/gc_pauses.py benchmarks/causes/torchao_unwrap.py --unwrap
    .venv/bin/python benchmarks/gc_pauses.py --over 0.005 samples/parametrized_linear.py
"""

from __future__ import annotations

import gc
import runpy
import sys
import time
from typing import Any


def main() -> None:
    argv = sys.argv[1:]
    over = 0.02
    if argv[:1] == ["--over"] and len(argv) > 2:
        over, argv = float(argv[1]), argv[2:]
    if not argv:
        raise SystemExit(f"usage: {sys.argv[0]} [--over SECONDS] script.py [args...]")
    started: list[float] = [0.0]
    long: list[tuple[int, float, int]] = []

    def timed(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        elif (spent := time.perf_counter() - started[0]) > over:
            long.append((info["generation"], spent, info["collected"]))

    gc.callbacks.append(timed)
    sys.argv = argv
    try:
        runpy.run_path(argv[0], run_name="__main__")
    finally:
        gc.callbacks.remove(timed)
        print(f"collections over {over * 1000:.0f} ms: {len(long)}", file=sys.stderr)
        for gen, spent, collected in long:
            print(f"  generation {gen}: {spent * 1000:.1f} ms, {collected:,} objects collected", file=sys.stderr)


if __name__ == "__main__":
    main()
