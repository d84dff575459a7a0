"""Accuracy of attribution on the seed case, measured in one process.

Runs ``dynaprof run samples/parametrized_linear.py --both --repeat N``: the parametrized and the
plain model compile alternately in the same process. For each warm pair, the compile-time
difference (parametrized - plain) is the cost of parametrization; dynaprof's sampled
``parametrization`` category and its exact property timers should both account for it (torch 2.4
traces no property: its timers are unknown there, and the sampled cause is the check).
Prints a Markdown table; the first pair is reported but left out of the summary line because
the first compile in a process also pays one-time imports.

    .venv/bin/python benchmarks/bench_accuracy.py --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.model import load_session  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rate", type=float, default=1000.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "-o", str(run), "--rate", str(args.rate),
               str(ROOT / "samples" / "parametrized_linear.py"), "--both", "--repeat", str(args.repeat)]
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        s = load_session(run)
    frames = sorted(s.frames, key=lambda f: f.start_s)
    timed = any(p.parametrized for fr in frames for p in fr.properties)  # torch 2.4: no property timers
    pairs = [(frames[i], frames[i + 1]) for i in range(0, len(frames) - 1, 2)]
    print("| pair | compile p=True | compile p=False | difference | sampled parametrization | sampled / diff "
          "| exact property timers | exact / diff |")
    print("|---|---|---|---|---|---|---|---|")
    ratios, exact_ratios = [], []
    for n, (t, f) in enumerate(pairs):
        assert (any(p.parametrized for p in t.properties) or not timed) and not f.properties, "unexpected frame order"
        diff = (t.compile_time_s or 0) - (f.compile_time_s or 0)
        sampled = t.axes.causes.get("parametrization", 0.0) if t.axes is not None else 0.0
        exact = sum(p.seconds for p in t.properties if p.parametrized) if timed else float("nan")
        if n > 0:
            ratios.append(sampled / diff)
            exact_ratios.append(exact / diff)
        print(f"| {n + 1}{' (first, cold)' if n == 0 else ''} | {t.compile_time_s:.3f} s | {f.compile_time_s:.3f} s "
              f"| {diff:.3f} s | {sampled:.3f} s | {sampled / diff:.2f} | {exact:.3f} s | {exact / diff:.2f} |")
    if ratios:
        print(f"\nwarm pairs: sampled parametrization / compile-time difference: median "
              f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}); "
              f"exact timers / difference: median {statistics.median(exact_ratios):.2f}; "
              f"sampling achieved {s.samples.achieved_hz if s.samples else 0:.0f} Hz")


if __name__ == "__main__":
    main()
