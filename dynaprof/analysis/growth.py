"""How compile cost grows with size (``dynaprof sweep``): t = a * N^k fitted on log-log axes for
each measure of a sweep (total compile time, each cause, each phase group, restart waste, and the
exact counts), with a 95% interval of k from the repeats and the fit's residual.

The estimate is the least-squares line through the log of each point's median against the log of
N. The interval is a percentile bootstrap, as ``noise`` makes for ``compare``: each resample draws
every point's runs again with replacement (within that point), takes their medians and fits again,
``RESAMPLES`` times, from a ``random.Random`` seeded by the measure's name (deterministic).
Without a point of two runs or more there is no interval. A measure absent from every run of a
point is left out at that point and said so (``Fit.absent_at``), never fitted as 0 (log 0 has no
value, and a cost that appears at size 16 has no exponent below it). Pure: no numpy, no I/O.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from dynaprof import fmt
from dynaprof.analysis.cause_table import CAUSE_ROWS, MIN_SHARE, OTHER_CAUSES
from dynaprof.analysis.repeats import median
from dynaprof.analysis.rollup import roll_up
from dynaprof.model.session import CATEGORY_LABELS, UNNAMED_CAUSES
from dynaprof.model.sweep import CAUSE_PREFIX, COUNT_LABELS, GROUP_PREFIX, RESTART_WASTE, TOTAL, Sweep

#: bootstrap resamples per interval, and the interval's coverage (as ``compare`` gave its change's
#: when this was written)
RESAMPLES = 2000
LEVEL = 0.95
#: a cost "matters" from this share of compile time at a point on: drawn in the chart (at any
#: point), named by the verdict (at the largest), gated by a bare ``--max-growth``
MATTERS = 0.05
#: a timing exponent this far outside its interval from its counts' exponent is flagged
FLAG_TOLERANCE = 0.25
#: ``--project`` warns past this many times the largest point measured
FAR = 4.0

#: the exact counts that measure the work behind a timing, first found wins: a timing exponent
#: that disagrees with its counts' is flagged (counts have no noise)
COUNTS_OF: dict[str, tuple[str, ...]] = {
    # tracing time includes the attempts restarts threw away: compared with every inlined call
    GROUP_PREFIX + "dynamo_tracing": ("instructions", "inlined_calls_all", "inlined_calls", "fx_nodes"),
    GROUP_PREFIX + "fake_tensor": ("fx_nodes",),
    GROUP_PREFIX + "guard_building": ("guards",),
    GROUP_PREFIX + "aot_autograd": ("aot_ops",),
    GROUP_PREFIX + "inductor": ("aot_ops",),
    GROUP_PREFIX + "kernel_compile": ("kernels",),
    RESTART_WASTE: ("inlined_calls_discarded", "restarts"),
}


def measure_label(measure: str) -> str:
    """How a measure is named in words: ``compile time``, a cause, a phase group, a count."""
    if measure == TOTAL:
        return "compile time"
    if measure == RESTART_WASTE:
        return "restart waste"
    if measure.startswith(CAUSE_PREFIX):
        return measure[len(CAUSE_PREFIX):]
    if measure.startswith(GROUP_PREFIX):
        key = measure[len(GROUP_PREFIX):]
        return "other phases" if key == "other" else CATEGORY_LABELS.get(key, key)
    return COUNT_LABELS.get(measure, measure)


def x_text(x: float) -> str:
    return f"{x:g}"


def k_text(k: float | None, digits: int = 1) -> str:
    return "?" if k is None else f"{round(k, digits) + 0.0:.{digits}f}"  # + 0.0: never "-0.0"


@dataclass(frozen=True)
class Fit:
    measure: str
    kind: str  # ``time`` (seconds) or ``count``
    label: str
    exponent: float | None
    low: float | None
    high: float | None
    log_a: float | None  # ln a of t = a * N^k
    #: root mean square of the fit's residuals in ln (0.05: the points sit within about 5% of the line)
    residual: float | None
    medians: tuple[tuple[float, float], ...]  # (N, median over the point's runs), present points only
    values: tuple[tuple[float, float], ...]  # (N, value) of every run it is present in
    absent_at: tuple[float, ...] = ()  # points where no run has it
    partial_at: tuple[tuple[float, int, int], ...] = ()  # (N, runs having it, runs) where only some do
    #: (k, ln a) of every bootstrap resample
    boot: tuple[tuple[float, float], ...] = field(default=(), repr=False)
    note: str = ""  # why there is no exponent

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def text(self, axis: str = "N", digits: int = 1) -> str:
        """``N^2.0 (1.9-2.1)``; ``N^1.0`` without an interval; ``N^1.0 (exact)`` where every run
        of every point agreed (counts)."""
        if self.exponent is None:
            return f"no exponent ({self.note})" if self.note else "no exponent"
        lo, hi = k_text(self.low, digits), k_text(self.high, digits)
        dash = " to " if "-" in lo + hi else "-"  # a negative end: "-0.2 to 0.1", not "-0.2-0.1"
        interval = f" ({lo}{dash}{hi})" if self.has_interval else ""
        if self.has_interval and not self.boot:
            interval = " (exact)"
        return f"{axis}^{k_text(self.exponent, digits)}{interval}"

    def residual_text(self) -> str:
        """``±4%``: how far the points typically sit from the line."""
        return "" if self.residual is None else f"±{100 * math.expm1(self.residual):.0f}%"

    def median_at(self, x: float) -> float | None:
        return next((v for px, v in self.medians if px == x), None)

    def at(self, x: float) -> float | None:
        """The fitted value at ``x``."""
        if self.exponent is None or self.log_a is None:
            return None
        return math.exp(self.log_a) * math.pow(x, self.exponent)

    def absence_text(self, axis: str) -> str:
        """``absent at LAYERS=4; in 1 of 3 runs at 8``, or empty."""
        parts = []
        if self.absent_at:
            parts.append(f"absent at {axis}=" + ", ".join(map(x_text, self.absent_at)))
        parts += [f"in {have} of {runs} runs at {x_text(x)}" for x, have, runs in self.partial_at]
        return "; ".join(parts)


def lstsq(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """(k, ln a, residual) of ln y = ln a + k ln x by least squares; residual: RMS in ln. Values
    must be positive and the xs not all equal (ValueError otherwise)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    n = len(lx)
    mx, my = sum(lx) / n, sum(ly) / n
    sxx = sum((a - mx) ** 2 for a in lx)
    if n < 2 or sxx <= 0:
        raise ValueError("a fit needs two different sizes")
    k = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sxx
    b0 = my - k * mx
    rms = math.sqrt(sum((b - b0 - k * a) ** 2 for a, b in zip(lx, ly, strict=True)) / n)
    return k, b0, rms


def percentile_interval(xs: list[float], level: float = LEVEL) -> tuple[float, float]:
    """The two-sided percentile interval (linear interpolation between order statistics)."""
    if len(xs) == 1:
        return xs[0], xs[0]
    cuts = statistics.quantiles(xs, n=1000, method="inclusive")
    tail = round((1 - level) / 2 * 1000)
    return cuts[tail - 1], cuts[-tail]


def fit_measure(measure: str, kind: str, points: Sequence[tuple[float, Sequence[float | None]]],
                seed: int = 0, resamples: int = RESAMPLES) -> Fit:
    """Fit one measure over ``points``: (N, the value of each good run at N; None where the run
    did not have it)."""
    label = measure_label(measure)
    present: list[tuple[float, list[float]]] = []
    absent: list[float] = []
    partial: list[tuple[float, int, int]] = []
    for x, runs in points:
        have = [v for v in runs if v is not None and v > 0]
        if not have:
            absent.append(x)
            continue
        if len(have) < len(runs):
            partial.append((x, len(have), len(runs)))
        present.append((x, have))
    medians = tuple((x, median(v)) for x, v in present)
    values = tuple((x, v) for x, vs in present for v in vs)

    def made(k: float | None, low: float | None, high: float | None, log_a: float | None, residual: float | None,
             boot: tuple[tuple[float, float], ...] = (), note: str = "") -> Fit:
        return Fit(measure, kind, label, k, low, high, log_a, residual, medians, values, tuple(absent),
                   tuple(partial), boot, note)

    if len({x for x, _ in present}) < 2:
        return made(None, None, None, None, None,
                    note="present at " + ("no point" if not present else f"one point only ({x_text(present[0][0])})"))
    xs = [x for x, _ in medians]
    k, b, rms = lstsq(xs, [m for _, m in medians])
    low = high = None
    boot: list[tuple[float, float]] = []
    if any(len(set(v)) > 1 for _, v in present):
        rng = random.Random(f"{seed}:{measure}")
        for _ in range(resamples):
            ys = [median(rng.choices(v, k=len(v))) for _, v in present]
            bk, bb, _ = lstsq(xs, ys)
            boot.append((bk, bb))
        low, high = percentile_interval(sorted(bk for bk, _ in boot))
    elif any(len(v) > 1 for _, v in present):
        low = high = k  # every run of every point agrees: no spread to draw from (exact counts)
    return made(k, low, high, b, rms, tuple(boot))


@dataclass(frozen=True)
class Flag:
    """A timing exponent that disagrees with the exponent of the counts of its work."""

    time: Fit
    count: Fit
    text: str


@dataclass(frozen=True)
class FailedRun:
    x: float
    repeat: int
    exit_status: int | None
    error: str


@dataclass(frozen=True)
class Growth:
    axis: str
    xs: tuple[float, ...]  # points with at least one good run, smallest first
    fits: list[Fit]  # total, then the timings by share at the largest point, then the counts
    flags: list[Flag] = field(default_factory=list)
    failed: list[FailedRun] = field(default_factory=list)

    def fit(self, measure: str) -> Fit | None:
        return next((f for f in self.fits if f.measure == measure), None)

    @property
    def total(self) -> Fit | None:
        return self.fit(TOTAL)

    def share(self, fit: Fit, x: float) -> float | None:
        """The measure's median at ``x`` as a share of the median compile time there."""
        total = self.total.median_at(x) if self.total is not None else None
        v = fit.median_at(x)
        return v / total if v is not None and total else None

    def max_share(self, fit: Fit) -> float:
        return max((s for x in self.xs if (s := self.share(fit, x)) is not None), default=0.0)

    def timings(self) -> list[Fit]:
        return [f for f in self.fits if f.kind == "time" and f.measure != TOTAL]

    def counts(self) -> list[Fit]:
        return [f for f in self.fits if f.kind == "count"]

    def drawn(self) -> list[Fit]:
        """The total and each timing above ``MATTERS`` of compile at any point (the chart's lines)."""
        return [f for f in self.fits if f.kind == "time" and (f.measure == TOTAL or self.max_share(f) >= MATTERS)]

    def mattering(self) -> list[Fit]:
        """Timings (causes, phase groups, restart waste) above ``MATTERS`` at the largest point."""
        if not self.xs:
            return []
        return [f for f in self.timings() if (self.share(f, self.xs[-1]) or 0.0) >= MATTERS]


def _is_cause_or_group(measure: str) -> bool:
    return measure.startswith((CAUSE_PREFIX, GROUP_PREFIX)) or measure == RESTART_WASTE


def growth(sweep: Sweep, seed: int = 0, resamples: int = RESAMPLES) -> Growth:
    """Every measure of ``sweep`` fitted against its first parameter; failed runs listed."""
    by_x: dict[float, list[tuple[dict[str, float], dict[str, int]]]] = {}
    failed: list[FailedRun] = []
    for p in sweep.points:
        for r in p.runs:
            if r.ok:
                by_x.setdefault(p.x, []).append((r.measures, r.counts))
            else:
                failed.append(FailedRun(p.x, r.repeat, r.exit_status, r.error or f"exit status {r.exit_status}"))
    xs = tuple(sorted(by_x))
    if xs:
        by_x = _rolled_up(by_x, xs[-1], sweep.cause_files)
    times = sorted({m for runs in by_x.values() for ms, _ in runs for m in ms})
    counts = [c for c in COUNT_LABELS if any(c in cs for runs in by_x.values() for _, cs in runs)]
    fits: list[Fit] = []
    for m in times:
        pts = [(x, [ms.get(m) for ms, _ in by_x[x]]) for x in xs]
        fits.append(fit_measure(m, "time", pts, seed, resamples))
    for c in counts:
        pts = [(x, [None if c not in cs else float(cs[c]) for _, cs in by_x[x]]) for x in xs]
        f = fit_measure(c, "count", pts, seed, resamples)
        if f.medians:  # a count that is 0 in every run (no restart at any size) has nothing to say
            fits.append(f)
    g = Growth(sweep.axis, xs, [], [], failed)
    total = [f for f in fits if f.measure == TOTAL]
    g.fits.extend(total)
    last = xs[-1] if xs else 0.0
    rest = [f for f in fits if f.kind == "time" and f.measure != TOTAL]
    rest.sort(key=lambda f: (-(g.share(f, last) or 0.0), -g.max_share(f), f.measure))
    g.fits.extend(rest)
    g.fits.extend(f for f in fits if f.kind == "count")
    g.flags.extend(_flags(g))
    return g


Runs = dict[float, list[tuple[dict[str, float], dict[str, int]]]]


def _rolled_up(by_x: Runs, last: float, files: dict[str, str]) -> Runs:
    """Each run's causes rolled up as the cause table rolls them (``analysis.rollup``), the groups
    chosen once, at the largest point, and applied at every point so each is one series: a roll-up
    row's seconds are its members' sum, the causes left over one ``other causes`` series."""
    causes = {m[len(CAUSE_PREFIX):] for runs in by_x.values() for ms, _ in runs for m in ms
              if m.startswith(CAUSE_PREFIX)}
    at_last = {c: statistics.median(ms.get(CAUSE_PREFIX + c, 0.0) for ms, _ in by_x[last]) for c in causes}
    rows, rest = roll_up(at_last, files, CAUSE_ROWS, MIN_SHARE)
    # a cause absent at the largest point stays a series of its own (it shrank away, or came late)
    groups = {g.label: g.members for g in rows if g.rolled} | ({OTHER_CAUSES: tuple(rest)} if rest else {})
    if not groups:
        return by_x
    member = {c for members in groups.values() for c in members}
    out: Runs = {}
    for x, runs in by_x.items():
        out[x] = []
        for ms, cs in runs:
            rolled = {m: v for m, v in ms.items() if m.removeprefix(CAUSE_PREFIX) not in member or m == TOTAL}
            for label, members in groups.items():
                v = sum(ms.get(CAUSE_PREFIX + c, 0.0) for c in members)
                if v > 0:
                    rolled[CAUSE_PREFIX + label] = v
            out[x].append((rolled, cs))
    return out


def _flags(g: Growth) -> list[Flag]:
    out: list[Flag] = []
    for t in g.timings():
        if t.exponent is None or g.max_share(t) < MATTERS:
            continue
        count = next((c for key in COUNTS_OF.get(t.measure, ()) if (c := g.fit(key)) and c.exponent is not None),
                     None)
        if count is None or count.exponent is None:
            continue
        if t.low is None or t.high is None:
            continue  # one run per point: a single timing's noise would be flagged as disagreement
        lo, hi = t.low, t.high
        if lo - FLAG_TOLERANCE <= count.exponent <= hi + FLAG_TOLERANCE:
            continue
        faster = t.exponent > count.exponent
        why = ("the time grows faster than the work counted (a cost these counts miss, or noise)" if faster else
               "the time grows slower than the work counted (a fixed cost per compile weighs at these sizes)")
        out.append(Flag(t, count, f"{t.label} grows as {t.text('N')} with {g.axis} but {count.label} as "
                                  f"{count.text('N')}: {why}"))
    return out


def verdict(g: Growth) -> list[str]:
    """The growth in words: compile time's exponent, then the cost that adds the most seconds from
    the smallest point to the largest (among those that matter at the largest), with its exponent
    and its share of compile at both ends; then, on a line of its own, a cost that grows faster but
    adds less (docs/growth.md)."""
    total = g.total
    if not g.xs:
        return ["no point ran to the end: nothing to fit"]
    if total is None:
        return ["nothing was compiled at any point: nothing to fit"]
    lines = []
    if total.exponent is None:
        lines.append(f"compile time: no exponent ({total.note})")
    else:
        first, last = total.medians[0], total.medians[-1]
        lines.append(f"compile time grows as {total.text('N')} with {g.axis}: "
                     f"{fmt.seconds(first[1])} at {x_text(first[0])}, {fmt.seconds(last[1])} at {x_text(last[0])}"
                     + (f" (fit {total.residual_text()})" if total.residual is not None else ""))
    # a cause of the user's code and restart waste name something to change; whole graph, the
    # collector and a phase group (a sum over causes) only where none of those matters
    mattering = [f for f in g.mattering() if f.exponent is not None and _is_cause_or_group(f.measure)]
    unnamed = {CAUSE_PREFIX + c for c in UNNAMED_CAUSES}
    ranked = [f for f in mattering if not f.measure.startswith(GROUP_PREFIX) and f.measure not in unnamed]
    ranked = ranked or mattering
    if ranked:
        lo, hi = g.xs[0], g.xs[-1]
        top = max(ranked, key=lambda f: (added_seconds(f, lo, hi), f.measure))
        lines.append(_cost_line(g, top, lo, hi))
        # a cost that grows faster but adds little is said after it, on a line of its own
        fastest = max(mattering, key=lambda f: (f.exponent or 0.0, f.measure))
        if fastest is not top and (fastest.exponent or 0.0) > (top.exponent or 0.0) + 0.2:
            lines.append(f"faster but smaller: {_cost_line(g, fastest, lo, hi)}, adding "
                         f"{fmt.seconds(added_seconds(fastest, lo, hi))}")
    return lines


def added_seconds(f: Fit, lo: float, hi: float) -> float:
    """The seconds a cost adds from the smallest point to the largest (its medians; absent is 0)."""
    return (f.median_at(hi) or 0.0) - (f.median_at(lo) or 0.0)


def _cost_line(g: Growth, f: Fit, lo: float, hi: float) -> str:
    at_lo = g.share(f, lo)
    start = f"{at_lo:.0%} of compile at {x_text(lo)}" if at_lo is not None else f"absent at {x_text(lo)}"
    end = f"{g.share(f, hi) or 0.0:.0%} at {x_text(hi)}"
    return f"{f.label} grows as {f.text('N')} with {g.axis}: it is {start} and {end}"


@dataclass(frozen=True)
class Projection:
    fit: Fit
    at: float
    value: float
    low: float | None
    high: float | None


def project(fit: Fit, at: float) -> Projection | None:
    """The fitted value at ``at``, with the bootstrap's interval of it; None without an exponent."""
    value = fit.at(at)
    if value is None:
        return None
    if not fit.boot:
        same = value if fit.has_interval else None  # exact counts: the one line; a single run: none
        return Projection(fit, at, value, same, same)
    lo, hi = percentile_interval(sorted(math.exp(b) * math.pow(at, k) for k, b in fit.boot))
    return Projection(fit, at, value, lo, hi)


def projections(g: Growth, at: float) -> list[Projection]:
    """The projected compile time at ``at``, and that of each cause and restart waste."""
    chosen = [f for f in g.fits if f.kind == "time" and not f.measure.startswith(GROUP_PREFIX)]
    return [p for f in chosen if (p := project(f, at)) is not None]


def projection_warning(g: Growth, at: float) -> str | None:
    """Said when ``at`` lies more than ``FAR`` times past the largest point measured."""
    if g.xs and at > FAR * g.xs[-1]:
        return (f"{g.axis}={x_text(at)} is {at / g.xs[-1]:.0f}x the largest point measured ({x_text(g.xs[-1])}): "
                "a power law fitted this far below may not hold there; measure closer to it")
    return None
