"""Does compare's noise verdict hold under load? Identical work must never read faster or slower.

In one sitting (``--n`` runs a side, every run a fresh process with cold compiler caches, made as a
user makes them: ``dynaprof run --repeat N`` for BASE, then again for NEW, so each side is a block):

1. **idle**: PAIRS pairs of one small eager script against itself, compared as ``dynaprof compare``
   compares them; every *faster*, *slower* or *real difference* is a false verdict;
2. **loaded**: the same while a CPU-bound process of the benchmark's own spins on one of the
   machine's cores (started before the condition's first run, stopped after its last, and bounded
   by a deadline of its own should the benchmark die);
3. **seed**: SEED_PAIRS pairs of ``samples/parametrized_linear.py`` plain against parametrized
   (eager backend, as ``benchmarks/bench_power.py`` runs it): every pair should read *slower*;
4. **simulation**: the Welch interval's coverage (how often a 95% interval holds the true ratio)
   on synthetic lognormal runs with the spreads measured in 1 and 2, against the percentile
   bootstrap of the ratio of medians that compare used before, at 3, 5 and 10 runs a side.

Each verdict is given at the default margin and at margin 0 (the interval alone), from the same
runs. The run-to-run spread is the standard deviation of the log compile times within a block.

    .venv/bin/python benchmarks/bench_noise.py                  # 20 + 20 pairs of 3 vs 3, 5 seed pairs: ~25 min
    .venv/bin/python benchmarks/bench_noise.py --simulate-only --sigmas 0.03 0.08
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.analysis import noise  # noqa: E402
from dynaprof.analysis.compare import REAL, compare_sessions, exact_text  # noqa: E402
from dynaprof.analysis.repeats import median  # noqa: E402
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
#: the background load: one core spinning until the benchmark stops it, or its own deadline
LOAD = "import time, sys\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"
SEED = ROOT / "samples" / "parametrized_linear.py"


def repeat_run(out: Path, n: int, script: list[str], cwd: Path) -> Session:
    """``dynaprof run --repeat N``: N fresh processes, cold compiler caches, no sampler."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(out), "--sampler", "none",
           "--repeat", str(n), *script]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(script)} failed: {proc.stderr.strip()[-400:]}")
    return load_session(out)


@contextmanager
def background_load(on: bool, limit_s: float) -> Iterator[None]:
    """A CPU-bound process for the block's duration (``on``), killed on the way out."""
    proc = subprocess.Popen([sys.executable, "-c", LOAD, str(limit_s)]) if on else None
    try:
        yield
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)


def log_sd(times: Sequence[float]) -> float:
    return statistics.stdev(math.log(t) for t in times)


def pair_row(p: int, base: Session, new: Session, margin: float) -> tuple[str, bool, str, str, str]:
    """(table row, whether exact counts differ, the total's verdict at the margin and at margin 0,
    the block note) of one pair."""
    cmp = compare_sessions(base, new, margin=margin)
    lead = cmp.noise[0]
    bare = compare_sessions(base, new, margin=0.0).noise[0]
    counts = bool(exact_text(cmp))
    row = (f"| {p} | {fmt_ms(lead.base_median)} | {fmt_ms(lead.new_median)} | {lead.change_text()} | "
           f"{lead.interval_text()} | {lead.verdict} | {bare.verdict} | {'differ' if counts else 'same'} |")
    return row, counts, lead.verdict, bare.verdict, cmp.order_note


def fmt_ms(s: float) -> str:
    return f"{s * 1e3:.0f} ms"


def condition(name: str, pairs: int, n: int, base_cmd: list[str], new_cmd: list[str], tmp: Path,
              margin: float, loaded: bool) -> tuple[list[str], list[float], list[str], list[str]]:
    """Pairs of N BASE runs then N NEW runs: the table, the spreads within blocks, the verdicts at
    the margin and at margin 0 (``real difference`` where the exact counts moved, when both sides
    run the same command: then that is a false verdict too)."""
    rows = [f"\n### {name}\n", "| pair | BASE median | NEW median | change | 95% interval | verdict | "
            "at margin 0 | exact counts |", "| ---: | ---: | ---: | ---: | ---: | --- | --- | --- |"]
    spreads: list[float] = []
    words: list[str] = []
    bare: list[str] = []
    blocks = 0
    with background_load(loaded, limit_s=3600):
        for p in range(1, pairs + 1):
            base = repeat_run(tmp / f"{name}-{p}-base", n, base_cmd, tmp)
            new = repeat_run(tmp / f"{name}-{p}-new", n, new_cmd, tmp)
            row, counts, word, at_zero, note = pair_row(p, base, new, margin)
            rows.append(row)
            same = counts and base_cmd == new_cmd
            words.append(REAL if same else word)
            bare.append(REAL if same else at_zero)
            blocks += bool(note)
            spreads += [log_sd([r.compile_s for r in s.repeats]) for s in (base, new)]
            print(f"  {name} {p}/{pairs}: {word}", file=sys.stderr, flush=True)
    rows.append(f"\nblock-order note given in {blocks} of {pairs} pairs")
    return rows, spreads, words, bare


def tally(words: list[str], wanted: str | None) -> str:
    """``0 of 20 false (0 slower, 0 faster, 0 real difference)`` or, with ``wanted``, hits."""
    if wanted is not None:
        return f"{sum(w == wanted for w in words)} of {len(words)} {wanted}"
    false = [w for w in words if w != noise.WITHIN]
    kinds = ", ".join(f"{sum(w == k for w in false)} {k}" for k in (noise.SLOWER, noise.FASTER, REAL))
    return f"{len(false)} of {len(words)} false ({kinds})"


# ---------------------------------------------------------------------------------------------
# simulation


def bootstrap_interval(base: Sequence[float], new: Sequence[float], rng: random.Random,
                       resamples: int = 500) -> tuple[float, float]:
    """The interval compare used before: a percentile bootstrap of the ratio of medians."""
    stats = sorted(median(rng.choices(new, k=len(new))) / median(rng.choices(base, k=len(base)))
                   for _ in range(resamples))
    return stats[int(0.025 * (resamples - 1))], stats[math.ceil(0.975 * (resamples - 1))]


def draw(rng: random.Random, n: int, sigma: float, spikes: float) -> list[float]:
    """N lognormal runs around 1 s; with probability ``spikes`` a run is also slowed 1.2-2x (the
    machine's load peaking), as both sides are."""
    return [rng.lognormvariate(0, sigma) * (rng.uniform(1.2, 2.0) if rng.random() < spikes else 1.0)
            for _ in range(n)]


def simulate(sigmas: Sequence[float], margin: float, trials: int) -> list[str]:
    rows = ["\n### Simulation: coverage of the 95% interval on identical sides\n",
            f"{trials:,} pairs per row; coverage: the share of intervals holding x1 (the true ratio); false: "
            f"*faster*/*slower* at margin 0 and at the {margin:.0%} margin.\n",
            "| runs | model | Welch on log times: coverage | false (margin 0) | false (margin) | "
            "bootstrap of medians: coverage |", "| ---: | --- | ---: | ---: | ---: | ---: |"]
    models = [(f"lognormal, spread {s:.0%}", s, s, 0.0) for s in sigmas]
    top = max(sigmas)
    models += [(f"spreads {min(sigmas):.0%} vs {top:.0%}", min(sigmas), top, 0.0),
               (f"spread {top:.0%}, 15% of runs slowed 1.2-2x", top, top, 0.15)]
    for n in (3, 5, 10):
        for label, sb, sn, spikes in models:
            rng = random.Random(f"{n}-{label}")
            held = boot = false0 = false_m = 0
            for _ in range(trials):
                a, b = draw(rng, n, sb, spikes), draw(rng, n, sn, spikes)
                _, lo, hi = noise.interval(a, b, ratio=True)
                held += lo <= 1.0 <= hi
                false0 += noise.verdict("t", a, b, margin=0.0).verdict != noise.WITHIN
                false_m += noise.verdict("t", a, b, margin=margin).verdict != noise.WITHIN
                blo, bhi = bootstrap_interval(a, b, rng)
                boot += blo <= 1.0 <= bhi
            rows.append(f"| {n} | {label} | {held / trials:.1%} | {false0 / trials:.1%} | {false_m / trials:.1%} | "
                        f"{boot / trials:.1%} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20, help="pairs of identical sides per condition")
    ap.add_argument("--seed-pairs", type=int, default=5, help="pairs of the seed's plain -> parametrized")
    ap.add_argument("--n", type=int, default=3, help="runs per side")
    ap.add_argument("--margin", type=float, default=100 * noise.DEFAULT_MARGIN, metavar="PCT")
    ap.add_argument("--trials", type=int, default=1000, help="simulated pairs per row")
    ap.add_argument("--simulate-only", action="store_true", help="the simulation alone, at --sigmas")
    ap.add_argument("--sigmas", type=float, nargs="+", default=[0.05, 0.10], help="spreads to simulate")
    args = ap.parse_args()
    margin = args.margin / 100
    began = time.monotonic()
    out: list[str] = []
    sigmas = list(args.sigmas)
    if not args.simulate_only:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            (tmp / "job.py").write_text(SCRIPT)
            job = [str(tmp / "job.py")]
            spread: dict[str, float] = {}
            for name, loaded in (("idle", False), ("loaded", True)):
                rows, spreads, words, bare = condition(name, args.pairs, args.n, job, job, tmp, margin, loaded)
                spread[name] = statistics.median(spreads)
                out += rows
                out.append(f"identical sides, {name}: {tally(words, None)} at the {margin:.0%} margin; "
                           f"{tally(bare, None)} at margin 0; run-to-run spread (stdev of log time within a block) "
                           f"median {spread[name]:.1%}, max {max(spreads):.1%}")
            plain = [str(SEED), "--no-parametrize", "--backend", "eager"]
            param = [str(SEED), "--parametrize", "--backend", "eager"]
            rows, _, words, bare = condition("seed", args.seed_pairs, args.n, plain, param, tmp, margin, False)
            out += rows
            out.append(f"seed, plain -> parametrized: {tally(words, noise.SLOWER)} at the {margin:.0%} margin; "
                       f"{tally(bare, noise.SLOWER)} at margin 0")
            sigmas = [round(spread["idle"], 3), round(spread["loaded"], 3), 0.30]
    out += simulate(sigmas, margin, args.trials)
    print(f"{args.n} vs {args.n} runs a side, each side a block (dynaprof run --repeat {args.n}); margin {margin:.0%}")
    print("\n".join(out))
    print(f"\nruntime {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
