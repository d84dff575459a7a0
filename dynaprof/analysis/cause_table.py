"""The cause x phase table: every sampled second by the user code it was spent for (rows) and the
compiler phase that spent it (columns), from ``Axes`` (``dynaprof.analysis.causes``).

Rows are causes, largest first. Causes under ``MIN_SHARE`` of the sampled time (or beyond the row
limit) roll up along the user's code (``dynaprof.analysis.rollup``: function, class, file,
package), so the rows shown explain the compile rather than a long tail of 1% lines. A roll-up row
keeps its members (the report opens it); what is left after the row limit is one ``other causes``
row. Columns are ``PHASE_GROUPS``, the finer ``PHASES`` grouped the way a compiler engineer reads a
compile (the same groups ``attribution`` sums and the flamegraphs colour), and only groups with
time are shown. Parametrization rows carry their detail labels (``Linear.weight via
Parametrization``) from ``Axes.parametrizations``; restart waste is a column (part of each row's
total, not added to it). The terminal, Markdown and HTML tables are all made from this one
structure, so they agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dynaprof.analysis.rollup import roll_up
from dynaprof.model.code_names import label_parts
from dynaprof.model.session import (
    CAUSE_PARAMETRIZATION,
    GROUP_OF,
    PHASE_GROUPS,
    PHASE_LABELS,
    Axes,
    FunctionRef,
    Session,
)

#: causes under this share of the sampled seconds are merged into ``OTHER_CAUSES``
MIN_SHARE = 0.01
OTHER_CAUSES = "other causes"
#: rows of causes a table shows before the rest are merged: the one default of every output's cause
#: table (terminal, summary.md, report.html, compare, sweep); ``--max-rows`` lowers it (``cause_rows``)
CAUSE_ROWS = 12
#: the terminal shows this share of ``cause_rows``: its first screen holds the run's line, the frames,
#: this table and the verdict in 80x24 (``docs/reports.md``, ``tests/unit/test_first_screen.py``)
SCREEN_SHARE = (2, 3)


def cause_rows(max_rows: int = CAUSE_ROWS) -> int:
    """The cause rows a table shows under ``--max-rows`` (``RenderOptions.max_rows``): ``CAUSE_ROWS``,
    or fewer where ``max_rows`` asks fewer; never more, since past it causes roll up into rows."""
    return max(1, min(max_rows, CAUSE_ROWS))


def screen_cause_rows(max_rows: int = CAUSE_ROWS) -> int:
    """The cause rows the terminal shows: ``SCREEN_SHARE`` of ``cause_rows`` (8 of 12 by default)."""
    num, den = SCREEN_SHARE
    return max(1, cause_rows(max_rows) * num // den)


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
    cause: str  # the cause key (``OTHER_CAUSES`` for the merged row)
    cells: dict[str, float]  # column key -> seconds
    total: float
    wasted: float  # seconds of ``total`` in attempts a restart threw away
    merged: int = 0  # causes merged into this row (the ``other causes`` row)
    details: tuple[Detail, ...] = ()
    more_details: tuple[int, float] = (0, 0.0)  # parametrizations not shown: count, seconds
    #: a roll-up row's causes and their seconds, largest first (a file's lines, a package's files' lines)
    members: tuple[Detail, ...] = ()


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


def cause_table(ax: Axes | None, compile_s: float | None = None, *, max_rows: int = CAUSE_ROWS,
                max_details: int = 5, min_share: float = MIN_SHARE,
                files: dict[str, str] | None = None) -> CauseTable | None:
    """The table of ``ax`` (None without axes or sampled time). ``compile_s``: the run's compile
    time, for the share column; ``max_rows``: rows shown before the rest are merged; ``files``: each
    user cause's file, along which small causes roll up (none: no roll-up)."""
    if ax is None:
        return None
    causes = {c: v for c, v in ax.causes.items() if v > 0}
    sampled = sum(causes.values())
    if sampled <= 0:
        return None
    groups, rest = roll_up(causes, files or {}, max_rows, min_share)
    waste = ax.restart_waste.by_cause
    rows: list[Row] = []
    for group in groups:
        c, v, members = group.label, group.seconds, group.members if group.rolled else ()
        details: tuple[Detail, ...] = ()
        more = (0, 0.0)
        if c == CAUSE_PARAMETRIZATION and ax.parametrizations:
            items = sorted(ax.parametrizations.items(), key=lambda kv: (-kv[1], kv[0]))
            listed = [(k, s) for k, s in items if s >= min_share * sampled][:max_details]
            details = tuple(Detail(k, s) for k, s in listed)
            hidden = items[len(listed):]
            more = (len(hidden), sum(s for _, s in hidden))
        if members:
            parts = tuple(Detail(m, causes[m]) for m in members)
            rows.append(Row(c, _sum_cells(ax, members), v, sum(waste.get(m, 0.0) for m in members), 0, (), (0, 0.0),
                            parts))  # fmt: skip
        else:
            rows.append(Row(c, _cells(ax, c), v, waste.get(c, 0.0), 0, details, more))
    if rest:
        rows.append(Row(OTHER_CAUSES, _sum_cells(ax, rest), sum(causes[c] for c in rest),
                        sum(waste.get(c, 0.0) for c in rest), len(rest)))  # fmt: skip
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


def _sum_cells(ax: Axes, causes: list[str] | tuple[str, ...]) -> dict[str, float]:
    cells: dict[str, float] = {}
    for c in causes:
        for g, v in _cells(ax, c).items():
            cells[g] = cells.get(g, 0.0) + v
    return cells


def cause_files(session: Session) -> dict[str, str]:
    """Each user cause's file: a cause is labelled ``name (file.py:line)``, and the session's
    function table holds the file's path (a traced frame's, or a node cause's). Two files of one
    base name (peft's and another package's ``layer.py``) are told apart by the function; a cause
    still ambiguous gets no file (it then never rolls up, rather than into the wrong package)."""
    by_base: dict[str, list[FunctionRef]] = {}
    for f in session.functions:
        if f.filename and not f.filename.startswith("<"):
            by_base.setdefault(f.filename.replace("\\", "/").rsplit("/", 1)[-1], []).append(f)
    out: dict[str, str] = {}
    for cause in session.axes.causes if session.axes else {}:
        parts = label_parts(cause)
        if parts is None or parts[1] not in by_base:
            continue
        name, base, _ = parts
        refs = by_base[base]
        paths = {f.filename for f in refs}
        if len(paths) > 1:
            paths = {f.filename for f in refs if _same_function(f.name, name)}
        if len(paths) == 1:
            out[cause] = paths.pop()
    return out


def _same_function(qualname: str, name: str) -> bool:
    """A label names a function by its qualified name or its last part (``forward``)."""
    return qualname == name or qualname.endswith("." + name) or name.endswith("." + qualname)


def session_cause_table(session: Session, max_rows: int = CAUSE_ROWS) -> CauseTable | None:
    return cause_table(session.axes, session.total_compile_s if session.frames else None, max_rows=max_rows,
                       files=cause_files(session))
