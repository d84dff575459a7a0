"""What a suite keeps of each run, and what it says per model and across the models. Pure.

A run's facts are its measures and counts as a sweep keeps them (``analysis.sweep_measures``),
graph breaks and failed compiles, and its sampled seconds split into kinds of cause
(``model.suite.CAUSE_KINDS``), each second in exactly one kind, first match wins:

1. restart waste: sampled in an attempt a restart threw away;
2. toolchain setup, the collector, parametrization: the cause rows of those names;
3. recompiles: spent on a compiled entry beyond its function's first (``findings.entries``, the one
   rule of what a recompile is);
4. graph breaks: spent on a resume function Dynamo made after a graph break (``torch_dynamo_resume_in_``);
5. user code: the rest given to the user's code, whole graph included; no provenance: the rest.

A model's compile time is the median over its runs that finished; its spread is (max - min) /
median; its counts are those of its median run (exact counts do not vary between runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dynaprof.analysis.cause_table import OTHER_CAUSES, session_cause_table
from dynaprof.analysis.causes import axes
from dynaprof.analysis.findings import entries
from dynaprof.analysis.repeats import median, median_repeat
from dynaprof.analysis.sweep_measures import run_counts, run_measures
from dynaprof.fmt import stored_s
from dynaprof.model.code_names import RESUME_PREFIX
from dynaprof.model.session import (
    CAUSE_COLLECTOR,
    CAUSE_PARAMETRIZATION,
    CAUSE_TOOLCHAIN,
    CAUSE_UNKNOWN,
    Axes,
    Session,
)
from dynaprof.model.suite import CAUSE_KINDS, Suite, SuiteRun
from dynaprof.model.sweep import CAUSE_PREFIX, GROUP_PREFIX, TOTAL

_NAMED_KINDS = {CAUSE_TOOLCHAIN: "toolchain", CAUSE_COLLECTOR: "collector", CAUSE_PARAMETRIZATION: "parametrization"}
#: how many models a kind of cause names where it weighs most
TOP_MODELS = 3


def _kind(cause: str, recompile: bool, resumed: bool) -> str:
    named = _NAMED_KINDS.get(cause)
    if named is not None:
        return named
    if recompile:
        return "recompiles"
    if resumed:
        return "graph_breaks"
    return "unattributed" if cause == CAUSE_UNKNOWN else "user_code"


def cause_kinds(session: Session) -> dict[str, float]:
    """``CAUSE_KINDS`` key -> sampled seconds of this run (only kinds > 0); empty without samples."""
    run: Axes | None
    if session.axes is not None:  # derived once (``attribution.apply_attribution``), as a loaded run has it
        run, per = session.axes, {f.key: f.axes for f in session.frames if f.axes is not None}
    else:
        run, per = axes(session)
    if run is None:
        return {}
    recompiled = {f.key for group in entries(session).values() for f in group[1:]}
    resumed = {f.key for f in session.frames if RESUME_PREFIX in f.name}
    out: dict[str, float] = {}
    seen: dict[str, float] = {}  # cause -> seconds given out through a frame

    def add(kind: str, secs: float) -> None:
        out[kind] = out.get(kind, 0.0) + secs

    for key, ax in per.items():
        add("restart_waste", ax.restart_waste.seconds)
        for cause, secs in ax.causes.items():
            seen[cause] = seen.get(cause, 0.0) + secs
            add(_kind(cause, key in recompiled, key in resumed), secs - ax.restart_waste.by_cause.get(cause, 0.0))
    frameless_waste = run.restart_waste.seconds - sum(ax.restart_waste.seconds for ax in per.values())
    add("restart_waste", frameless_waste)
    for cause, secs in run.causes.items():  # samples of no frame (between compiles' edges)
        rest = secs - seen.get(cause, 0.0) - max(0.0, run.restart_waste.by_cause.get(cause, 0.0) - sum(
            ax.restart_waste.by_cause.get(cause, 0.0) for ax in per.values()))
        add(_kind(cause, False, False), rest)
    return {k: stored_s(out[k]) for k in CAUSE_KINDS if out.get(k, 0.0) > 1e-9}


def run_facts(session: Session) -> tuple[dict[str, float], dict[str, int], dict[str, float]]:
    """A run's measures, counts and seconds per kind of cause; its attribution already derived."""
    counts = run_counts(session)
    if (breaks := session.graph_breaks) is not None:  # unknown is left out, as run_counts leaves it
        counts["graph_breaks"] = breaks
    counts["failures"] = sum(1 for f in session.frames if f.status == "failed")
    return run_measures(session), dict(sorted(counts.items())), cause_kinds(session)


def rolled_causes(session: Session) -> dict[str, float]:
    """The run's cause rows as its first screen rolls them up (functions into their class, file or
    package): row label -> seconds, largest first; "other causes" left out."""
    table = session_cause_table(session)
    if table is None:
        return {}
    return {r.cause: stored_s(r.total) for r in table.rows if r.cause != OTHER_CAUSES and r.total > 0}


@dataclass
class ModelSummary:
    """One entry of a suite, over its runs."""

    name: str
    runs: int  # runs that finished
    failed: list[SuiteRun]  # runs without a result, with their errors
    median_s: float | None
    min_s: float | None
    max_s: float | None
    median_run: SuiteRun | None
    hottest_cause: tuple[str, float] | None = None
    hottest_phase: tuple[str, float] | None = None
    #: ``CAUSE_KINDS`` key -> median seconds over the runs
    kinds: dict[str, float] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)

    @property
    def spread(self) -> float | None:
        if self.median_s is None or self.min_s is None or self.max_s is None or self.median_s <= 0:
            return None
        return (self.max_s - self.min_s) / self.median_s

    @property
    def counts(self) -> dict[str, int]:
        return self.median_run.counts if self.median_run is not None else {}


def _under(run: SuiteRun, prefix: str) -> dict[str, float]:
    """The run's measures under ``prefix`` (``cause:``, ``group:``), by their names."""
    return {k[len(prefix):]: v for k, v in run.measures.items() if k.startswith(prefix)}


def _largest(rows: dict[str, float]) -> tuple[str, float] | None:
    return max(rows.items(), key=lambda kv: (kv[1], kv[0])) if rows else None


def model_summary(name: str, runs: Sequence[SuiteRun]) -> ModelSummary:
    ok = [r for r in runs if r.ok and TOTAL in r.measures]
    # a run that never finished but was retried or resumed later is not a failure of the model
    done = {r.repeat for r in runs if r.ok}
    failed = [r for r in runs if not r.ok and r.repeat not in done]
    if not ok:
        return ModelSummary(name, 0, failed, None, None, None, None)
    times = [r.measures[TOTAL] for r in ok]
    mid = ok[median_repeat(times)]
    kinds = {k: median([r.kinds.get(k, 0.0) for r in ok]) for k in CAUSE_KINDS}
    return ModelSummary(name, len(ok), failed, median(times), min(times), max(times), mid,
                        _largest(mid.causes or _under(mid, CAUSE_PREFIX)), _largest(_under(mid, GROUP_PREFIX)),
                        {k: v for k, v in kinds.items() if v > 0}, times)


def model_summaries(suite: Suite) -> list[ModelSummary]:
    """Every entry's summary (CSV suites: every model named in a row), slowest first."""
    names = [e.name for e in suite.entries] or sorted({r.entry for r in suite.runs})
    out = [model_summary(n, suite.runs_of(n)) for n in names]
    return sorted(out, key=lambda m: (-(m.median_s or -1.0), m.name))


@dataclass(frozen=True)
class KindTotal:
    """One kind of cause across the suite: seconds summed over the models' medians, share of the
    suite's compile time, and the models where it weighs most (name, seconds)."""

    kind: str
    label: str
    seconds: float
    share: float | None
    top: list[tuple[str, float]]


def kind_totals(models: Sequence[ModelSummary]) -> tuple[float, list[KindTotal]]:
    """(the suite's compile time: the sum of the models' medians, every kind with seconds, largest first)."""
    total = sum(m.median_s or 0.0 for m in models)
    out = []
    for kind, label in CAUSE_KINDS.items():
        per = sorted(((m.name, m.kinds[kind]) for m in models if m.kinds.get(kind, 0.0) > 0),
                     key=lambda kv: (-kv[1], kv[0]))
        secs = sum(v for _, v in per)
        if secs > 0:
            out.append(KindTotal(kind, label, stored_s(secs), secs / total if total > 0 else None, per[:TOP_MODELS]))
    return total, sorted(out, key=lambda k: (-k.seconds, k.kind))
