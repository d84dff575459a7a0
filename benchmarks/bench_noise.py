"""False-positive rate of compare's noise verdict on identical runs.

Runs one small script ``2 x PAIRS x N`` times with ``dynaprof run --repeat`` (each run a fresh
process, cold compiler caches), deals the runs out in order into PAIRS pairs of N BASE and N NEW
runs, and compares each pair as ``dynaprof compare`` would (``analysis.noise``). Every pair is
the same script on the same machine, so every verdict other than *within noise* is a false
positive. Prints the rate for the total compile time and for the phases, and the runs' spread.

    .venv/bin/python benchmarks/bench_noise.py --pairs 10 --n 5          # 100 runs, ~6 min on CPU
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.analysis.compare import compare_sessions  # noqa: E402
from dynaprof.analysis.noise import WITHIN  # noqa: E402
from dynaprof.model import load_session  # noqa: E402
from dynaprof.model.session import Session  # noqa: E402

SCRIPT = """
import torch
@torch.compile(backend="eager")
def f(x, y):
    for _ in range(8):
        x = torch.relu(x @ y + 1).sin()
    return x.sum()
f(torch.randn(16, 16), torch.randn(16, 16))
"""


def side(s: Session, runs: list[int]) -> Session:
    out = copy.copy(s)
    out.repeats = [s.repeats[i] for i in runs]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--n", type=int, default=5, help="runs per side")
    args = ap.parse_args()
    total = 2 * args.pairs * args.n
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "job.py"
        script.write_text(SCRIPT)
        cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "-o", str(Path(d) / "run"), "--sampler", "none",
               "--repeat", str(total), str(script)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        subprocess.run(cmd, check=True, capture_output=True, cwd=d, env=env)
        s = load_session(Path(d) / "run")
    if len(s.repeats) != total:
        sys.exit(f"expected {total} runs, got {len(s.repeats)}")
    times = [r.compile_s for r in s.repeats]
    total_fp = phase_fp = phases = 0
    rows = []
    for p in range(args.pairs):
        at = 2 * p * args.n
        base, new = side(s, list(range(at, at + args.n))), side(s, list(range(at + args.n, at + 2 * args.n)))
        verdicts = compare_sessions(base, new).noise
        lead = verdicts[0]
        total_fp += lead.verdict != WITHIN
        phase_fp += sum(v.verdict != WITHIN for v in verdicts[1:])
        phases += len(verdicts) - 1
        rows.append(f"| {p + 1} | {lead.change_text()} | {lead.interval_text()} | {lead.verdict} |")
    print(f"{total} runs of one script; compile median {statistics.median(times) * 1e3:.1f} ms, "
          f"min {min(times) * 1e3:.1f} ms, max {max(times) * 1e3:.1f} ms, "
          f"stdev/median {statistics.stdev(times) / statistics.median(times):.0%}\n")
    print("| pair | ratio of medians | 95% interval | verdict |\n| ---: | ---: | ---: | --- |")
    print("\n".join(rows))
    print(f"\nfalse positives: total compile {total_fp} of {args.pairs} pairs ({total_fp / args.pairs:.0%}); "
          f"phases {phase_fp} of {phases} ({phase_fp / max(phases, 1):.0%})")


if __name__ == "__main__":
    main()
