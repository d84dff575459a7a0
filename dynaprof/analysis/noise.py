"""Is a change in compile time real or noise? Repeated runs on both sides (``dynaprof run --repeat
N``, or several runs per side) give samples. The change is NEW / BASE, the ratio of the sides'
geometric means, with a 95% **Welch t-interval on the log times**: compile times are positive and
their noise multiplies, so their logs are near normal, and Welch's interval (each side its own
variance, Welch-Satterthwaite degrees of freedom) keeps its coverage with 3 runs a side, where a
bootstrap of 3 runs cannot see the spread it never sampled (``benchmarks/bench_noise.py``
simulates both). When a side has a run of 0 s (a phase only some runs have) the change is the
difference of the means in seconds, with Welch's interval on the seconds.

The verdict is *slower* or *faster* only when the interval leaves out no change **and** the change
is at least the practical margin (``DEFAULT_MARGIN``, or ``--margin PCT``): a shift smaller than
the machine's own run-to-run spread is *within noise* whatever the interval says, since load that
changes between two blocks of runs moves every run of a block alike, which no interval sees.
Below ``MIN_RUNS`` runs a side the verdict is *too few runs to tell*, with how many would do.
Deterministic, pure Python: no numpy, no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from dynaprof import fmt
from dynaprof.analysis.repeats import make_repeat, median
from dynaprof.analysis.student_t import t_quantile
from dynaprof.model.session import Repeat, Session

#: the interval's coverage
LEVEL = 0.95
#: the method, as reports name it
METHOD = "Welch t-interval on log times"
#: fewer runs than this on a side: no verdict (2 runs give an interval, but one of a width no change fits in)
MIN_RUNS = 3
#: the practical margin: the run-to-run spread of one small eager compile on dynaprof's own 2-core
#: test machine, idle and beside a CPU-bound process (``benchmarks/bench_noise.py``, docs/reports.md)
DEFAULT_MARGIN = 0.10
#: the most runs a side "how many would do" suggests
MAX_SUGGESTED = 100
WITHIN = "within noise"
TOO_FEW = "too few runs to tell"
SLOWER = "slower"
FASTER = "faster"


@dataclass(frozen=True)
class Verdict:
    """One measure (``total compile``, a phase, a cause) compared over repeated runs."""

    what: str
    base_median: float
    new_median: float
    n_base: int
    n_new: int
    #: ``ratio`` (NEW / BASE geometric means), ``difference`` (seconds: a run of 0 s on a side) or
    #: ``none`` (fewer than ``MIN_RUNS`` runs on a side: no interval)
    kind: str
    estimate: float | None
    low: float | None
    high: float | None
    #: ``within noise``, ``slower``, ``faster`` or ``too few runs to tell`` (kind ``none``)
    verdict: str
    #: the practical margin the verdict used (a fraction: 0.10 is 10%)
    margin: float = DEFAULT_MARGIN
    #: runs a side that would tell a change the size of the margin at this spread; None: the runs
    #: there are do, or there is no spread to judge by
    needed: int | None = None

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
        """``total compile: 1.00 s -> 1.50 s, x1.50 (95% interval x1.40-x1.62; 5 vs 5 runs; margin
        10%): slower``; the medians, then the change and its interval."""
        head = f"{self.what}: {fmt.seconds(self.base_median)} -> {fmt.seconds(self.new_median)}"
        runs = f"{self.n_base} vs {self.n_new} runs"
        if self.kind == "none":
            return f"{head} ({runs}): {TOO_FEW}; {self.needed_text()}"
        more = f"; {self.needed_text()}" if self.needed is not None else ""
        return (f"{head}, {self.change_text()} ({LEVEL:.0%} interval {self.interval_text()}; {runs}; "
                f"margin {self.margin:.0%}): {self.verdict}{more}")

    def needed_text(self) -> str:
        """``5 runs a side would tell a 10% change (dynaprof run --repeat 5)``."""
        n = self.needed if self.needed is not None else MIN_RUNS
        what = f" would tell a {self.margin:.0%} change" if self.needed is not None and self.margin > 0 else \
            " would do"
        return f"{fmt.plural(n, 'run')} a side{what} (dynaprof run --repeat {n})"


def _signed(seconds: float) -> str:
    return fmt.duration(seconds, "compare", sign=True)


def _variance(xs: Sequence[float]) -> float:
    """The sample variance (n - 1), in floats: ``statistics.variance`` works in fractions, 20x slower."""
    mean = math.fsum(xs) / len(xs)
    return math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1)


def _welch(base: Sequence[float], new: Sequence[float], level: float) -> tuple[float, float, float]:
    """(mean(new) - mean(base), low, high): Welch's t-interval of the difference of the means."""
    d = statistics.fmean(new) - statistics.fmean(base)
    vb, vn = _variance(base) / len(base), _variance(new) / len(new)
    se = math.sqrt(vb + vn)
    if se == 0:  # every run alike on each side: the difference is what it is
        return d, d, d
    df = (vb + vn) ** 2 / (vb ** 2 / (len(base) - 1) + vn ** 2 / (len(new) - 1))
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return d, d - half, d + half


def interval(base: Sequence[float], new: Sequence[float], *, ratio: bool,
             level: float = LEVEL) -> tuple[float, float, float]:
    """(estimate, low, high): the ratio of geometric means NEW / BASE with Welch's interval on the
    log times (``ratio``: every value > 0), or the difference of the means in seconds with Welch's
    interval on the seconds. Each side needs 2 values."""
    if len(base) < 2 or len(new) < 2:
        raise ValueError("an interval needs 2 runs a side")
    if not ratio:
        return _welch(base, new, level)
    d, lo, hi = _welch([math.log(x) for x in base], [math.log(x) for x in new], level)
    return math.exp(d), math.exp(lo), math.exp(hi)


def _log_spread(sides: Sequence[Sequence[float]]) -> float | None:
    """The pooled standard deviation of the log times of the sides with 2 runs or more."""
    groups = [[math.log(x) for x in xs] for xs in sides if len(xs) >= 2 and all(x > 0 for x in xs)]
    dof = sum(len(g) - 1 for g in groups)
    if not dof:
        return None
    return math.sqrt(sum(_variance(g) * (len(g) - 1) for g in groups) / dof)


def runs_needed(spread: float, margin: float, level: float = LEVEL) -> int | None:
    """Runs a side (at least ``MIN_RUNS``) for which the interval of two sides with this spread of
    log times is narrower than the margin: a change the size of the margin then reads as one about
    half the time, a larger one more often. None past ``MAX_SUGGESTED`` (or with no margin)."""
    if margin <= 0:
        return None
    for n in range(MIN_RUNS, MAX_SUGGESTED + 1):
        if t_quantile(1 - (1 - level) / 2, 2 * n - 2) * spread * math.sqrt(2 / n) <= math.log1p(margin):
            return n
    return None


def verdict(what: str, base: Sequence[float], new: Sequence[float], margin: float = DEFAULT_MARGIN) -> Verdict:
    """The change of one measure between two sets of runs, with its interval and verdict."""
    bm, nm = median(base), median(new)
    nb, nn = len(base), len(new)
    spread = _log_spread([base, new])
    needed = runs_needed(spread, margin) if spread is not None else None
    if min(nb, nn) < MIN_RUNS:
        return Verdict(what, bm, nm, nb, nn, "none", None, None, None, TOO_FEW, margin, needed)
    wide = needed if needed is not None and needed > min(nb, nn) else None
    if all(x > 0 for x in (*base, *new)):
        est, lo, hi = interval(base, new, ratio=True)
        small = abs(math.log(est)) < math.log1p(margin)
        word = WITHIN if small or lo <= 1.0 <= hi else SLOWER if lo > 1.0 else FASTER
        return Verdict(what, bm, nm, nb, nn, "ratio", est, lo, hi, word, margin, wide if word == WITHIN else None)
    est, lo, hi = interval(base, new, ratio=False)
    small = abs(est) < margin * max(statistics.fmean(base), statistics.fmean(new))
    word = WITHIN if small or lo <= 0.0 <= hi else SLOWER if lo > 0.0 else FASTER
    return Verdict(what, bm, nm, nb, nn, "difference", est, lo, hi, word, margin, None)


def runs_of(session: Session) -> list[Repeat]:
    """A session's runs: its repeats, or the one run it is."""
    return list(session.repeats) or [make_repeat(1, session, cold=False)]


#: the most causes given a verdict (the largest by median)
MAX_CAUSES = 12


def noise_verdicts(base: Session, new: Session, margin: float = DEFAULT_MARGIN) -> list[Verdict]:
    """The total compile time first, then every torch phase (span) either side timed, then the
    causes (sampled seconds; when every run on both sides was sampled), each group by the size of
    the larger median; empty unless a side has repeated runs."""
    if not base.repeats and not new.repeats:
        return []
    rb, rn = runs_of(base), runs_of(new)
    out = [verdict("total compile", [r.compile_s for r in rb], [r.compile_s for r in rn], margin)]
    names = sorted({p for r in (*rb, *rn) for p in r.phases})
    phases = [verdict(f"phase {name}", [r.phases.get(name, 0.0) for r in rb], [r.phases.get(name, 0.0) for r in rn],
                      margin) for name in names]
    phases.sort(key=lambda v: (-max(v.base_median, v.new_median), v.what))
    causes: list[Verdict] = []
    if all(r.causes for r in (*rb, *rn)):
        names = sorted({c for r in (*rb, *rn) for c in r.causes})
        causes = [verdict(f"cause {name}", [r.causes.get(name, 0.0) for r in rb],
                          [r.causes.get(name, 0.0) for r in rn], margin) for name in names]
        causes.sort(key=lambda v: (-max(v.base_median, v.new_median), v.what))
    return out + phases + causes[:MAX_CAUSES]


def _started(run: Repeat) -> datetime | None:
    try:
        return datetime.fromisoformat(run.start_time) if run.start_time else None
    except ValueError:
        return None


def block_note(base: Session, new: Session) -> str:
    """Why the runs' order may bias the verdict: all of one side's runs started before all of the
    other's (a block each, as two ``--repeat N`` make them). Empty when they interleave, when a
    side has one run only and the other too, or when a run's start is unknown (older sessions)."""
    rb, rn = runs_of(base), runs_of(new)
    if len(rb) + len(rn) < 3:
        return ""
    tb, tn = [_started(r) for r in rb], [_started(r) for r in rn]
    known_b, known_n = [t for t in tb if t is not None], [t for t in tn if t is not None]
    if len(known_b) != len(tb) or len(known_n) != len(tn):
        return ""
    try:
        if max(known_b) < min(known_n):
            first, then = ("BASE", len(rb)), ("NEW", len(rn))
        elif max(known_n) < min(known_b):
            first, then = ("NEW", len(rn)), ("BASE", len(rb))
        else:
            return ""
    except TypeError:  # a start with a time zone and one without: no order to tell
        return ""
    return (f"the runs were made in blocks: {_side(*first, 'all ')} came before {_side(*then)}, so a change "
            "in the machine's load between the blocks reads as a change of the code; make them alternately and "
            "pool them (dynaprof compare --base A1 A2 .. --new B1 B2 .., docs/ci.md)")


def _side(name: str, n: int, all_: str = "") -> str:
    """``the BASE run``, ``all 3 BASE runs`` / ``the 3 NEW runs``."""
    return f"the {name} run" if n == 1 else f"{all_ or 'the '}{n} {name} runs"
