"""Compile-time budgets for CI (``dynaprof check``): is this run within its limits?

Each limit is optional; ``check`` returns every breach as one sentence a PR author can act on
("compile time 3.20 s > budget 2.00 s", "guards in 0/0 forward (model.py:11): 2,639 > budget
1,000"). ``max_guards`` applies to each compiled frame (guard sets are per frame: one huge set
slows every call of that frame). ``max_recompiles`` counts compiles of a code location beyond
its first (per reset generation). ``max_eager_fallbacks`` counts calls that ran uncompiled because
their frame hit the recompile limit (at least one per frame that hit it: torch runs the later ones
without telling a profiler, see docs/session-format.md). ``max_regression_pct`` compares total compile time with a
baseline run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dynaprof import fmt
from dynaprof.analysis.compare import seconds
from dynaprof.analysis.findings import entries
from dynaprof.model.session import KIND_LABELS, CompiledFrame, Session, compile_by_kind, display_name


@dataclass(frozen=True)
class Budget:
    max_compile_time_s: float | None = None
    max_restarts: int | None = None
    max_guards: int | None = None  # per frame
    max_fx_nodes: int | None = None  # per frame: nodes of the FX graph Dynamo produced (graph_node_count)
    max_graph_breaks: int | None = None
    max_recompiles: int | None = None
    max_eager_fallbacks: int | None = None
    max_regression_pct: float | None = None  # needs a baseline session

    def is_empty(self) -> bool:
        return all(v is None for v in vars(self).values())


@dataclass(frozen=True)
class Breach:
    limit: str  # the Budget field
    message: str
    frame: str | None = None  # CompiledFrame.key for per-frame breaches


@dataclass
class CheckResult:
    breaches: list[Breach] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # "compile time 1.20 s <= 2.00 s", ...

    @property
    def ok(self) -> bool:
        return not self.breaches


def recompiles(session: Session) -> int:
    """Compiles of a code location after its first one (per reset generation: ``findings.entries``)."""
    return sum(len(group) - 1 for group in entries(session).values())


def eager_fallbacks(session: Session) -> tuple[int, bool]:
    """(calls that ran uncompiled after a recompile limit, whether that is exact): a frame that hit
    the limit whose count is unknown counts as the one call known to have run eager."""
    hit = [f for f in session.frames if f.recompile_limit_hit]
    exact = all(f.eager_fallback_calls is not None for f in hit)
    return sum(1 if f.eager_fallback_calls is None else f.eager_fallback_calls for f in hit), exact


def _where(f: CompiledFrame) -> str:
    name, filename, lineno = display_name(f)
    return f"{f.trace_id} {fmt.one_line(name, 80)} ({fmt.location(filename, lineno)})"


def split_text(session: Session) -> str:
    """`` (forward 1.2 s, backward 3.4 s)`` when the run has compiles other than forward ones."""
    kinds = compile_by_kind(session.frames)
    if not set(kinds) - {"forward"}:
        return ""
    return " (" + ", ".join(f"{KIND_LABELS.get(k, k)} {seconds(v)}" for k, v in kinds.items()) + ")"


def _per_frame_limit(result: CheckResult, field: str, noun: str, counts: list[tuple[CompiledFrame, int | None]],
                     limit: int | None) -> None:
    """A limit on each frame's count: one breach per frame over it, largest first."""
    if limit is None:
        return
    over = [(f, n) for f, n in counts if n is not None and n > limit]
    for f, n in sorted(over, key=lambda fn: (-fn[1], fn[0].start_s)):
        result.breaches.append(Breach(field, f"{noun} in {_where(f)}: {n:,} > budget {limit:,}", f.key))
    if not over:
        known = [n for _, n in counts if n is not None]
        most = f"{max(known):,}" if known else "unknown"
        result.checked.append(f"{noun} per frame (most {most}) <= {limit:,}")


def _count_limit(result: CheckResult, limit: str, what: str, value: int | None, budget: int | None) -> None:
    if budget is None:
        return
    if value is None:  # never a pass: the run cannot show it holds
        result.breaches.append(Breach(limit, f"{what} unknown in this session (budget {budget:,})"))
        return
    if value > budget:
        result.breaches.append(Breach(limit, f"{what} {value:,} > budget {budget:,}"))
    else:
        result.checked.append(f"{what} {value:,} <= {budget:,}")


def check(session: Session, budget: Budget, baseline: Session | None = None) -> CheckResult:
    """Every breach of ``budget`` (empty when within it), plus what was checked and passed."""
    if budget.max_regression_pct is not None and baseline is None:
        raise ValueError("max_regression_pct needs a baseline session")
    result = CheckResult()
    total = session.total_compile_s
    split = split_text(session)
    if budget.max_compile_time_s is not None:
        if total > budget.max_compile_time_s:
            result.breaches.append(Breach("max_compile_time_s", f"compile time {seconds(total)}{split} > budget "
                                                                f"{seconds(budget.max_compile_time_s)}"))
        else:
            result.checked.append(f"compile time {seconds(total)}{split} <= {seconds(budget.max_compile_time_s)}")
    _count_limit(result, "max_restarts", "restarts", sum(f.restarts for f in session.frames), budget.max_restarts)
    _count_limit(result, "max_graph_breaks", "graph breaks", session.graph_breaks,
                 budget.max_graph_breaks)
    _count_limit(result, "max_recompiles", "recompiles", recompiles(session), budget.max_recompiles)
    fallbacks, exact = eager_fallbacks(session)
    _count_limit(result, "max_eager_fallbacks", "eager fallback calls" + ("" if exact else " (at least)"),
                 fallbacks, budget.max_eager_fallbacks)
    _per_frame_limit(result, "max_guards", "guards", [(f, f.guard_count) for f in session.frames], budget.max_guards)
    _per_frame_limit(result, "max_fx_nodes", "FX nodes", [(f, f.graph_node_count) for f in session.frames],
                     budget.max_fx_nodes)
    if budget.max_regression_pct is not None and baseline is not None:
        _regression(result, baseline.total_compile_s, total, budget.max_regression_pct)
    return result


def _regression(result: CheckResult, base: float, new: float, limit_pct: float) -> None:
    change = f"({seconds(base)} -> {seconds(new)})"
    if base <= 0:
        if new > 0:
            result.breaches.append(Breach("max_regression_pct", f"compile time regressed from nothing {change}: the "
                                                                "baseline compiled nothing"))
        else:
            result.checked.append("compile time regression: neither run compiled anything")
        return
    pct = 100.0 * (new - base) / base
    if pct > limit_pct:
        result.breaches.append(Breach("max_regression_pct", f"compile time regressed {pct:+.1f}% {change} > budget "
                                                            f"{limit_pct:g}%"))
    else:
        result.checked.append(f"compile time change {pct:+.1f}% {change} <= {limit_pct:g}%")


def summary(session: Session, result: CheckResult) -> str:
    """One line: ``ok: ...`` or ``over budget: N breaches``."""
    frames = len(session.frames)
    head = (f"{fmt.plural(frames, 'compiled frame')}, {seconds(session.total_compile_s)} compile time"
            f"{split_text(session)}")
    if result.ok:
        return f"ok: {head}; " + "; ".join(result.checked)
    n = len(result.breaches)
    return f"over budget: {fmt.plural(n, 'breach', 'breaches')} ({head})"
