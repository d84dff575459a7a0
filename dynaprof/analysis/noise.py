"""Is a change in compile time real or noise? Repeated runs on both sides (``dynaprof run --repeat
N``) give samples; the change is the ratio of the medians, NEW / BASE, with a 95% interval from a
percentile bootstrap of that ratio (each side resampled with replacement, ``RESAMPLES`` times, from
``random.Random(seed)``: deterministic). When a side's median is 0 the change is the difference of
the medians in seconds, bootstrapped the same way. The verdict is *within noise* when the interval
holds 1 (or 0 for a difference), else *slower* or *faster*. Pure: no numpy, no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from dynaprof import fmt
from dynaprof.analysis.repeats import make_repeat, median
from dynaprof.model.session import Repeat, Session

#: bootstrap resamples per interval
RESAMPLES = 2000
#: the interval's coverage
LEVEL = 0.95
#: the method, as reports name it
METHOD = "bootstrap of the ratio of medians"
WITHIN = "within noise"


@dataclass(frozen=True)
class Verdict:
    """One measure (``total compile``, a phase) compared over repeated runs."""

    what: str
    base_median: float
    new_median: float
    n_base: int
    n_new: int
    #: ``ratio`` (NEW / BASE medians), ``difference`` (seconds, a side's median is 0) or ``none``
    #: (fewer than 2 runs on a side: no interval)
    kind: str
    estimate: float | None
    low: float | None
    high: float | None
    #: ``within noise``, ``slower``, ``faster``, or ``no interval`` (kind ``none``)
    verdict: str

    def interval_text(self) -> str:
        """``x1.40-x1.62`` or ``+0.10 s to +0.30 s``; empty without an interval."""
        if self.low is None or self.high is None:
            return ""
        if self.kind == "ratio":
            return f"x{self.low:.2f}-x{self.high:.2f}"
        return f"{_signed(self.low)} to {_signed(self.high)}"

    def change_text(self) -> str:
        """``x1.50`` or ``+0.20 s``; empty without an estimate."""
        if self.estimate is None:
            return ""
        return f"x{self.estimate:.2f}" if self.kind == "ratio" else _signed(self.estimate)

    def text(self) -> str:
        """``total compile: 1.00 s -> 1.50 s, x1.50 (95% interval x1.40-x1.62; 5 vs 5 runs): slower``"""
        head = f"{self.what}: {fmt.seconds(self.base_median)} -> {fmt.seconds(self.new_median)}"
        runs = f"{self.n_base} vs {self.n_new} runs"
        if self.kind == "none":
            return f"{head} ({runs}): no interval; repeat each side (dynaprof run --repeat 5)"
        return f"{head}, {self.change_text()} ({LEVEL:.0%} interval {self.interval_text()}; {runs}): {self.verdict}"


def _signed(seconds: float) -> str:
    return fmt.duration(seconds, "compare", sign=True)


def _quantile(sorted_xs: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted values."""
    pos = q * (len(sorted_xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def interval(base: Sequence[float], new: Sequence[float], *, ratio: bool, seed: int = 0,
             resamples: int = RESAMPLES, level: float = LEVEL) -> tuple[float, float]:
    """The percentile-bootstrap interval of median(new) / median(base) (``ratio``) or of
    median(new) - median(base). Resamples whose base median is 0 are skipped for a ratio."""
    rng = random.Random(seed)
    stats: list[float] = []
    for _ in range(resamples):
        b = median(rng.choices(base, k=len(base)))
        n = median(rng.choices(new, k=len(new)))
        if ratio:
            if b > 0:
                stats.append(n / b)
        else:
            stats.append(n - b)
    if not stats:
        raise ValueError("no usable resample")
    stats.sort()
    tail = (1 - level) / 2
    return _quantile(stats, tail), _quantile(stats, 1 - tail)


def verdict(what: str, base: Sequence[float], new: Sequence[float], seed: int = 0) -> Verdict:
    """The change of one measure between two sets of runs, with its interval and verdict."""
    bm, nm = median(base), median(new)
    if len(base) < 2 or len(new) < 2:
        return Verdict(what, bm, nm, len(base), len(new), "none", None, None, None, "no interval")
    if bm > 0 and nm > 0:
        lo, hi = interval(base, new, ratio=True, seed=seed)
        word = WITHIN if lo <= 1.0 <= hi else "slower" if lo > 1.0 else "faster"
        return Verdict(what, bm, nm, len(base), len(new), "ratio", nm / bm, lo, hi, word)
    lo, hi = interval(base, new, ratio=False, seed=seed)
    word = WITHIN if lo <= 0.0 <= hi else "slower" if lo > 0.0 else "faster"
    return Verdict(what, bm, nm, len(base), len(new), "difference", nm - bm, lo, hi, word)


def runs_of(session: Session) -> list[Repeat]:
    """A session's runs: its repeats, or the one run it is."""
    return list(session.repeats) or [make_repeat(1, session, cold=False)]


#: the most causes given a verdict (the largest by median)
MAX_CAUSES = 12


def noise_verdicts(base: Session, new: Session, seed: int = 0) -> list[Verdict]:
    """The total compile time first, then every torch phase (span) either side timed, then the
    causes (sampled seconds; when every run on both sides was sampled), each group by the size of
    the larger median; empty unless a side has repeated runs."""
    if not base.repeats and not new.repeats:
        return []
    rb, rn = runs_of(base), runs_of(new)
    out = [verdict("total compile", [r.compile_s for r in rb], [r.compile_s for r in rn], seed)]
    names = sorted({p for r in (*rb, *rn) for p in r.phases})
    phases = [verdict(f"phase {name}", [r.phases.get(name, 0.0) for r in rb], [r.phases.get(name, 0.0) for r in rn],
                      seed) for name in names]
    phases.sort(key=lambda v: (-max(v.base_median, v.new_median), v.what))
    causes: list[Verdict] = []
    if all(r.causes for r in (*rb, *rn)):
        names = sorted({c for r in (*rb, *rn) for c in r.causes})
        causes = [verdict(f"cause {name}", [r.causes.get(name, 0.0) for r in rb],
                          [r.causes.get(name, 0.0) for r in rn], seed) for name in names]
        causes.sort(key=lambda v: (-max(v.base_median, v.new_median), v.what))
    return out + phases + causes[:MAX_CAUSES]
