"""Two suites compared model by model (``dynaprof compare SUITE_A SUITE_B``, ``pr``, ``check
--base``), and a suite's own budgets. Pure.

Per model: the noise verdict of its compile times (``analysis.noise.verdict``: the same interval
and margin as ``compare`` on two runs), the exact counts that changed (its median runs'), and the
kind of cause whose median seconds moved most. Across the suite: the geometric mean of the models'
ratios (each the ratio of its sides' geometric means) with a 95% t-interval over the models' log
ratios (the models are the sample: it says how the typical model moved, not one model's noise),
and the models slower and faster outside the noise, largest change first.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from dynaprof import fmt
from dynaprof.analysis.noise import DEFAULT_MARGIN, FASTER, LEVEL, SLOWER, TOO_FEW, Verdict, verdict
from dynaprof.analysis.student_t import t_quantile
from dynaprof.analysis.suite_facts import ModelSummary, model_summaries
from dynaprof.model.suite import CAUSE_KINDS, SUITE_COUNTS, Suite


@dataclass
class ModelChange:
    name: str
    base: ModelSummary | None
    new: ModelSummary | None
    verdict: Verdict | None  # None: a side has no finished run
    #: (count, BASE, NEW) for each exact count that differs
    counts: list[tuple[str, int | None, int | None]] = field(default_factory=list)
    #: the kind of cause that moved most: (label, NEW - BASE seconds)
    moved: tuple[str, float] | None = None

    @property
    def delta_s(self) -> float | None:
        if self.base is None or self.new is None or self.base.median_s is None or self.new.median_s is None:
            return None
        return self.new.median_s - self.base.median_s

    def why(self) -> str:
        """``+1.20 s (parametrization)``"""
        d = self.delta_s
        head = fmt.duration(d, "compare", sign=True) if d is not None else "?"
        return head + (f" ({self.moved[0]})" if self.moved is not None else "")

    def side_note(self) -> str:
        """Why there is no verdict: ``only in BASE``, ``no finished run in NEW``; empty otherwise."""
        if self.base is None or self.new is None:
            return "only in " + ("NEW" if self.base is None else "BASE")
        for side, m in (("BASE", self.base), ("NEW", self.new)):
            if m.median_s is None:
                return f"no finished run in {side}"
        return ""


@dataclass
class SuiteComparison:
    models: list[ModelChange]
    margin: float
    #: geometric mean of the models' ratios NEW / BASE and its 95% interval over the models
    geomean: float | None = None
    low: float | None = None
    high: float | None = None
    compared: int = 0  # models with a ratio on both sides

    @property
    def slower(self) -> list[ModelChange]:
        return _ranked([m for m in self.models if m.verdict is not None and m.verdict.verdict == SLOWER])

    @property
    def faster(self) -> list[ModelChange]:
        return _ranked([m for m in self.models if m.verdict is not None and m.verdict.verdict == FASTER])

    def headline(self, limit: int = 5) -> str:
        """``3 of 40 models slower: X +1.20 s (parametrization), ...; 1 faster: Y -0.50 s (recompiles)``"""
        n = len(self.models)
        slower, faster = self.slower, self.faster
        if not slower and not faster:
            few = sum(1 for m in self.models if m.verdict is not None and m.verdict.verdict == TOO_FEW)
            tail = f" ({few} with too few runs to tell)" if few else ""
            return f"no model of {n} changed outside the noise{tail}"
        parts = []
        for word, ms in (("slower", slower), ("faster", faster)):
            if ms:
                shown = ", ".join(f"{m.name} {m.why()}" for m in ms[:limit])
                more = f", and {len(ms) - limit} more" if len(ms) > limit else ""
                parts.append(f"{len(ms)} of {n} models {word}: {shown}{more}")
        return "; ".join(parts)

    def geomean_text(self) -> str:
        """``geometric mean x1.04 (95% interval x0.98-x1.10, 40 models)``"""
        if self.geomean is None:
            return "geometric mean: no model has a compile time on both sides"
        interval = (f"{LEVEL:.0%} interval x{self.low:.2f}-x{self.high:.2f}, "
                    if self.low is not None and self.high is not None else "")
        return f"geometric mean x{self.geomean:.2f} ({interval}{fmt.plural(self.compared, 'model')})"


def _ranked(ms: list[ModelChange]) -> list[ModelChange]:
    return sorted(ms, key=lambda m: (-abs(m.delta_s or 0.0), m.name))


def _moved(base: ModelSummary, new: ModelSummary) -> tuple[str, float] | None:
    deltas = [(CAUSE_KINDS[k], new.kinds.get(k, 0.0) - base.kinds.get(k, 0.0)) for k in CAUSE_KINDS]
    deltas = [d for d in deltas if abs(d[1]) > 0]
    return max(deltas, key=lambda d: (abs(d[1]), d[0])) if deltas else None


def _counts(base: ModelSummary, new: ModelSummary) -> list[tuple[str, int | None, int | None]]:
    b, n = base.counts, new.counts
    return [(label, b.get(k), n.get(k)) for k, label in SUITE_COUNTS.items()
            if k in b and k in n and b.get(k) != n.get(k)]


def compare_suites(base: Suite, new: Suite, margin: float = DEFAULT_MARGIN) -> SuiteComparison:
    bs = {m.name: m for m in model_summaries(base)}
    ns = {m.name: m for m in model_summaries(new)}
    names = list(dict.fromkeys([*bs, *ns]))
    models = []
    logs: list[float] = []
    for name in names:
        b, n = bs.get(name), ns.get(name)
        ch = ModelChange(name, b, n, None)
        if b is not None and n is not None and b.times and n.times:
            ch.verdict = verdict("compile time", b.times, n.times, margin)
            ch.counts, ch.moved = _counts(b, n), _moved(b, n)
            if all(t > 0 for t in (*b.times, *n.times)):
                logs.append(statistics.fmean(math.log(t) for t in n.times)
                            - statistics.fmean(math.log(t) for t in b.times))
        models.append(ch)
    out = SuiteComparison(models, margin, compared=len(logs))
    if logs:
        mean = statistics.fmean(logs)
        out.geomean = math.exp(mean)
        if len(logs) >= 2:
            half = t_quantile(1 - (1 - LEVEL) / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
            out.low, out.high = math.exp(mean - half), math.exp(mean + half)
    return out


@dataclass(frozen=True)
class SuiteBreach:
    model: str
    message: str


def compile_time_breaches(suite: Suite, max_s: float) -> tuple[list[SuiteBreach], int]:
    """Models whose median compile time is over ``max_s``; and how many models were checked."""
    models = model_summaries(suite)
    out = [SuiteBreach(m.name, f"{m.name}: compile time {fmt.seconds(m.median_s)} (median of "
                       f"{fmt.plural(m.runs, 'run')}) is over the budget of {fmt.seconds(max_s)}")
           for m in models if m.median_s is not None and m.median_s > max_s]
    return out, sum(1 for m in models if m.median_s is not None)


def regression_breaches(cmp: SuiteComparison) -> list[SuiteBreach]:
    """Models slower than the margin beyond the noise (``cmp`` made with ``margin`` = the allowed
    regression). A side with too few runs for an interval is judged on its medians alone, said."""
    out = []
    for m in cmp.models:
        v = m.verdict
        if v is None:
            continue
        if v.verdict == SLOWER:
            out.append(SuiteBreach(m.name, f"{m.name}: {v.text()}; {m.why()}"))
        elif v.verdict == TOO_FEW and v.base_median > 0 and v.new_median / v.base_median > 1 + cmp.margin:
            out.append(SuiteBreach(m.name, f"{m.name}: compile time {fmt.seconds(v.base_median)} -> "
                                   f"{fmt.seconds(v.new_median)}, x{v.new_median / v.base_median:.2f} over the "
                                   f"{cmp.margin:.0%} allowed, judged on medians alone ({v.n_base} vs {v.n_new} runs: "
                                   "too few for an interval)"))
    return out


