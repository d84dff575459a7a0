"""dynaprof's own functions during one warm compile of the seed (eager, parametrized), every hook
installed, sampler off, under cProfile: how often each hook runs and its own time. Exact call
counts, where timings on this VM cannot resolve a hook's cost (docs/performance.md, issue 36).

    .venv/bin/python benchmarks/bench_hook_calls.py [--rows 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import overhead_cases

import dynaprof


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=25)
    args = ap.parse_args()
    overhead_cases.compile_cpu("seed-eager")  # torch's lazy imports
    with tempfile.TemporaryDirectory() as d:
        prof = dynaprof.profile(Path(d) / "run", sampler="none", render=False).start()
        overhead_cases.compile_cpu("seed-eager")  # dynaprof's lazy installs
        pr = cProfile.Profile()
        pr.enable()
        overhead_cases.compile_cpu("seed-eager")
        pr.disable()
        prof.stop()
    out = io.StringIO()
    stats = pstats.Stats(pr, stream=out)
    total = stats.total_tt  # type: ignore[attr-defined]
    own = sum(v[2] for k, v in stats.stats.items() if "/dynaprof/" in k[0])  # type: ignore[attr-defined]
    print(f"dynaprof's own time: {own * 1000:.1f} ms of {total * 1000:.0f} ms profiled ({own / total:.1%})\n")
    stats.sort_stats("tottime").print_stats("/dynaprof/", args.rows)
    print(out.getvalue())


if __name__ == "__main__":
    main()
