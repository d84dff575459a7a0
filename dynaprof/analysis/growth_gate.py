"""Growth across two sweeps (``dynaprof compare SWEEP_A SWEEP_B``, ``pr``) and growth budgets
(``dynaprof check SWEEP --max-growth``). Pure: reads ``analysis.growth.Growth``.

An exponent's change is NEW's minus BASE's, with the percentile interval of the differences of the
two bootstraps' exponents (independent resamples, paired in order): *outside noise* (steeper or
flatter) when the interval leaves out 0. A budget is breached when an exponent's whole interval
lies above it; an exponent without an interval (one run per point) is held to its estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from dynaprof.analysis.growth import LEVEL, Fit, Growth, growth, k_text, measure_label, percentile_interval
from dynaprof.model.sweep import CAUSE_PREFIX, COUNT_LABELS, GROUP_PREFIX, TOTAL, Sweep

STEEPER = "steeper"
FLATTER = "flatter"
WITHIN = "within noise"
NO_INTERVAL = "no interval"


@dataclass(frozen=True)
class ExponentChange:
    measure: str
    label: str
    base: Fit | None
    new: Fit | None
    delta: float | None
    low: float | None
    high: float | None
    verdict: str  # STEEPER, FLATTER, WITHIN, NO_INTERVAL, or why there is no change ("only in NEW")

    def text(self, axis: str) -> str:
        """``parametrization: N^1.0 (0.9-1.1) -> N^2.0 (1.9-2.1), +1.00 (+0.85 to +1.15): steeper``"""
        b = self.base.text(axis, 2) if self.base is not None else "absent"
        n = self.new.text(axis, 2) if self.new is not None else "absent"
        change = ""
        if self.delta is not None:
            change = f", {self.delta:+.2f}"
            if self.low is not None and self.high is not None:
                change += f" ({LEVEL:.0%} interval {self.low:+.2f} to {self.high:+.2f})"
        return f"{self.label}: {b} -> {n}{change}: {self.verdict}"


def _resampled(f: Fit) -> list[float] | None:
    """The exponents of ``f``'s bootstrap; its one exponent where every run agreed (exact counts);
    None without an interval."""
    if f.boot:
        return [k for k, _ in f.boot]
    return [f.exponent] if f.has_interval and f.exponent is not None else None


def _change(measure: str, base: Fit | None, new: Fit | None) -> ExponentChange:
    label = measure_label(measure)
    if base is None or new is None or base.exponent is None or new.exponent is None:
        why = "only in NEW" if base is None else "only in BASE" if new is None else "no exponent on a side"
        return ExponentChange(measure, label, base, new, None, None, None, why)
    delta = new.exponent - base.exponent
    bk, nk = _resampled(base), _resampled(new)
    if bk is None or nk is None:
        return ExponentChange(measure, label, base, new, delta, None, None, NO_INTERVAL)
    n = max(len(bk), len(nk))
    lo, hi = percentile_interval(sorted(nk[i % len(nk)] - bk[i % len(bk)] for i in range(n)))
    word = STEEPER if lo > 0 else FLATTER if hi < 0 else WITHIN
    if lo == hi == 0:
        word = WITHIN
    return ExponentChange(measure, label, base, new, delta, lo, hi, word)


#: NEW's bootstrap is drawn with another seed than BASE's, so that two sweeps of the same runs do not
#: draw the same resamples (whose differences would all be 0)
NEW_SEED = 1


def compare_sweeps(base: Sweep, new: Sweep) -> tuple[Growth, Growth, list[ExponentChange]]:
    """Both sweeps fitted (NEW with ``NEW_SEED``) and their exponents compared."""
    gb, gn = growth(base), growth(new, seed=NEW_SEED)
    return gb, gn, compare_growth(gb, gn)


def compare_growth(base: Growth, new: Growth) -> list[ExponentChange]:
    """Every measure either sweep fitted: total first, then timings, then counts (NEW's order)."""
    order = [f.measure for f in new.fits] + [f.measure for f in base.fits if new.fit(f.measure) is None]
    return [_change(m, base.fit(m), new.fit(m)) for m in order]


def resolve_measure(g: Growth, name: str) -> str | None:
    """The measure key ``name`` means: a key (``cause:parametrization``), a cause, a phase group's
    key or label, ``restart waste``, ``total`` / ``compile time``, or a count; case-insensitive."""
    want = name.strip().lower().replace("_", " ")
    for f in g.fits:
        names = {f.measure, f.label}
        for prefix in (CAUSE_PREFIX, GROUP_PREFIX):
            if f.measure.startswith(prefix):
                names.add(f.measure[len(prefix):])
        if f.measure == TOTAL:
            names.add("compile")
        if f.measure in COUNT_LABELS:
            names.add(f.measure)
        if want in {n.lower().replace("_", " ") for n in names}:
            return f.measure
    return None


@dataclass(frozen=True)
class GrowthBreach:
    fit: Fit
    bound: float
    message: str


@dataclass
class GrowthCheck:
    breaches: list[GrowthBreach]
    checked: list[str]
    unknown: list[str]  # named measures no fit has

    @property
    def ok(self) -> bool:
        return not self.breaches and not self.unknown


def _held(g: Growth, f: Fit, bound: float) -> tuple[bool, str]:
    """(breached, the line saying so)."""
    text = f"{f.label} grows as {f.text('N', 2)}"
    if f.exponent is None:
        return False, f"{text}: not checked"
    if f.low is not None:
        over = f.low > bound
        return over, f"{text}, {'above' if over else 'within'} the bound {k_text(bound, 2)}"
    over = f.exponent > bound
    return over, (f"{text}, {'above' if over else 'within'} the bound {k_text(bound, 2)} "
                  "(no interval: one run per point; repeat each point with --repeat 3)")


def check_growth(g: Growth, default: float | None, named: dict[str, float]) -> GrowthCheck:
    """``default`` holds total compile time and every timing that matters at the largest point;
    ``named`` measure name -> bound holds that measure (named bounds win over the default)."""
    chosen: dict[str, float] = {}
    if default is not None:
        for f in [g.total, *g.mattering()]:
            if f is not None:
                chosen[f.measure] = default
    unknown = []
    for name, bound in named.items():
        key = resolve_measure(g, name)
        if key is None:
            unknown.append(name)
        else:
            chosen[key] = bound
    out = GrowthCheck([], [], unknown)
    for key, bound in chosen.items():
        fit = g.fit(key)
        if fit is None:
            continue
        over, line = _held(g, fit, bound)
        if over:
            out.breaches.append(GrowthBreach(fit, bound, line))
        else:
            out.checked.append(line)
    return out
