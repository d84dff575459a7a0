"""Parallel rendering (``DYNAPROF_JOBS=2``, ``run_folder.writer.PARALLEL_RENDERERS``) on or off.

Issue #34 asks to keep the forked second rendering process on by default, or delete it. On
``bench_scale``'s synthetic session (``--scale 1``: 10,000 frames, 1,000,000 samples) this times
``dynaprof report -q`` in a fresh process, alternately without and with ``DYNAPROF_JOBS=2``
(``--rounds`` each, the order alternating so that drift in the machine's load hits both alike):
wall seconds, CPU seconds of the process and its children, and peak memory of all its processes.

    .venv/bin/python benchmarks/bench_jobs.py [--scale 1.0] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_scale import report_once, saved_case  # noqa: E402


def measure(scale: float, rounds: int) -> dict[str, dict[str, float]]:
    runs: dict[str, list[dict[str, float]]] = {"1": [], "2": []}
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        saved_case(scale, folder)
        report_once(folder)  # the first re-render may rewrite session.json: not timed
        for i in range(rounds):
            for jobs in ("1", "2") if i % 2 == 0 else ("2", "1"):
                os.environ["DYNAPROF_JOBS"] = jobs
                runs[jobs].append(report_once(folder))
    os.environ.pop("DYNAPROF_JOBS", None)
    return {jobs: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for jobs, rs in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    got = measure(args.scale, args.rounds)
    print(f"| DYNAPROF_JOBS (scale {args.scale:g}, median of {args.rounds}) | wall s | CPU s | peak MiB |")
    print("|---|---|---|---|")
    for jobs, m in got.items():
        print(f"| {jobs} | {m['wall_s']:.1f} | {m['cpu_s']:.1f} | {m['peak_mib']:.0f} |")


if __name__ == "__main__":
    main()
