"""The cause x phase table: every sampled second by the user code it was spent for (rows) and the
compiler phase that spent it (columns), from ``Axes`` (``dynaprof.analysis.causes``).

Rows are causes, largest first; causes under ``MIN_SHARE`` of the sampled time (or beyond the row
limit) are folded into one ``other causes`` row. Columns are ``PHASE_GROUPS``, the finer ``PHASES``
grouped the way a compiler engineer reads a compile (the same groups ``attribution`` sums and the
flamegraphs colour), and only groups with time are shown. Parametrization rows carry their
detail labels (``Linear.weight via Parametrization``) from ``Axes.parametrizations``; restart waste
is a column (part of each row's total, not added to it). The terminal, Markdown and HTML tables are
all made from this one structure, so they agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dynaprof.model.session import CAUSE_PARAMETRIZATION, GROUP_OF, PHASE_GROUPS, PHASE_LABELS, Axes, Session

#: causes under this share of the sampled seconds are folded into ``OTHER_CAUSES``
MIN_SHARE = 0.01
OTHER_CAUSES = "other causes"

@dataclass(frozen=True)
class Column:
    key: str
    label: str
    short: str
    phases: tuple[str, ...]

    @property
    def description(self) -> str:
        """``Inductor graph passes + Inductor lowering + ...``: what the column adds up."""
        return " + ".join(PHASE_LABELS.get(p, p) for p in self.phases)


@dataclass(frozen=True)
class Detail:
    """One parametrization under the ``parametrization`` row (no phase split: the total only)."""

    label: str
    seconds: float


@dataclass(frozen=True)
class Row:
    cause: str  # the cause key (``OTHER_CAUSES`` for the folded row)
    cells: dict[str, float]  # column key -> seconds
    total: float
    wasted: float  # seconds of ``total`` in attempts a restart threw away
    folded: int = 0  # causes folded into this row (the ``other causes`` row)
    details: tuple[Detail, ...] = ()
    more_details: tuple[int, float] = (0, 0.0)  # parametrizations not shown: count, seconds


@dataclass(frozen=True)
class CauseTable:
    columns: list[Column]
    rows: list[Row]
    totals: Row  # column sums over all causes
    compile_s: float  # the denominator of "% of compile" (sampled seconds when compile time is unknown)
    restart_waste: float
    notes: list[str] = field(default_factory=list)

    def share(self, seconds: float) -> float:
        return seconds / self.compile_s if self.compile_s > 0 else 0.0


def _cells(ax: Axes, cause: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for phase, row in ax.matrix.items():
        v = row.get(cause, 0.0)
        if v > 0:
            g = GROUP_OF.get(phase, "other")
            out[g] = out.get(g, 0.0) + v
    return out


def cause_table(ax: Axes | None, compile_s: float | None = None, *, max_rows: int = 12,
                max_details: int = 5, min_share: float = MIN_SHARE) -> CauseTable | None:
    """The table of ``ax`` (None without axes or sampled time). ``compile_s``: the run's compile
    time, for the share column; ``max_rows``: causes shown before the rest are folded."""
    if ax is None:
        return None
    causes = {c: v for c, v in ax.causes.items() if v > 0}
    sampled = sum(causes.values())
    if sampled <= 0:
        return None
    ordered = sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))
    keep = [(c, v) for c, v in ordered if v >= min_share * sampled][: max(1, max_rows)]
    kept = {c for c, _ in keep}
    rest = [c for c, _ in ordered if c not in kept]
    waste = ax.restart_waste.by_cause
    rows: list[Row] = []
    for c, v in keep:
        details: tuple[Detail, ...] = ()
        more = (0, 0.0)
        if c == CAUSE_PARAMETRIZATION and ax.parametrizations:
            items = sorted(ax.parametrizations.items(), key=lambda kv: (-kv[1], kv[0]))
            shown = [(k, s) for k, s in items if s >= min_share * sampled][:max_details]
            details = tuple(Detail(k, s) for k, s in shown)
            hidden = items[len(shown):]
            more = (len(hidden), sum(s for _, s in hidden))
        rows.append(Row(c, _cells(ax, c), v, waste.get(c, 0.0), 0, details, more))
    if rest:
        cells: dict[str, float] = {}
        for c in rest:
            for g, v in _cells(ax, c).items():
                cells[g] = cells.get(g, 0.0) + v
        rows.append(Row(OTHER_CAUSES, cells, sum(causes[c] for c in rest), sum(waste.get(c, 0.0) for c in rest),
                        len(rest)))
    col_totals: dict[str, float] = {}
    for r in rows:
        for g, v in r.cells.items():
            col_totals[g] = col_totals.get(g, 0.0) + v
    columns = [Column(g.key, g.label, g.short, g.phases) for g in PHASE_GROUPS if col_totals.get(g.key, 0.0) > 0]
    totals = Row("all causes", col_totals, sampled, ax.restart_waste.seconds, len(causes))
    denominator = compile_s if compile_s and compile_s > 0 else sampled
    notes = []
    if compile_s and sampled < 0.9 * compile_s:
        notes.append(f"sampled seconds cover {100 * sampled / compile_s:.0f}% of compile time")
    return CauseTable(columns, rows, totals, denominator, ax.restart_waste.seconds, notes)


def session_cause_table(session: Session, max_rows: int = 12) -> CauseTable | None:
    return cause_table(session.axes, session.total_compile_s if session.frames else None, max_rows=max_rows)
