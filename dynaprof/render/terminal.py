"""The compact summary printed at the end of ``dynaprof run`` (and saved as summary.txt).

What it says is ``render.report_facts``'s (frames, their per-compile numbers, failures, the cause
table's labels and cells, the sampler), as in ``summary.md`` and ``report.html``; this module lays
it out in a width and makes it terminal-safe. Its tables show ``RenderOptions.max_rows`` frames
and ``analysis.cause_table.screen_cause_rows`` causes (the first screen fits 80x24).
"""

from __future__ import annotations

import textwrap

from dynaprof import fmt
from dynaprof.analysis import how_made
from dynaprof.analysis.cache_summary import cache_line
from dynaprof.analysis.cause_table import CauseTable, Column, screen_cause_rows, session_cause_table
from dynaprof.analysis.findings import findings, hottest, overlap_note, parametrization_summary, totals
from dynaprof.analysis.notes import first_screen_notes
from dynaprof.analysis.repeats import repeat_summary
from dynaprof.model.cache import cache_totals
from dynaprof.model.session import CompiledFrame, Session
from dynaprof.render import cache_section
from dynaprof.render.base import TABLE_ROWS, Files, RenderContext
from dynaprof.render.report_facts import (
    TERMINAL,
    FrameFact,
    cause_cell,
    cause_label,
    compile_by_kind_text,
    failure_text,
    frame_facts,
    frame_id,
    frame_where,
    frames_by_time,
    parametrized_text,
    restart_waste_text,
    samples_text,
)

#: table rows carry this mark until ``_wrap``: they are sized to the width already, never wrapped
_ROW = "\x00"


def _frame_row(f: CompiledFrame, facts: list[FrameFact]) -> list[str]:
    status = "" if f.status == "ok" else f" [{f.status}]"
    return [fmt.terminal_safe(frame_id(f)), fmt.terminal_safe(frame_where(f)) + status, fmt.seconds(f.compile_time_s),
            *(c.text(f) for c in facts)]


def summary_text(session: Session, max_rows: int = TABLE_ROWS, width: int | None = None, *,
                 screen: bool = False) -> str:
    """The summary, every line at most ``width`` columns (default ``WIDTH``): prose is wrapped with
    a hanging indent, tables shrink their text columns. ``screen``: the first screen a run prints,
    which leaves how the run was made and its repro line to summary.txt and summary.md (and says
    where), so the verdict stays on the screen."""
    width = WIDTH if width is None else max(40, width)
    if not screen:
        return "\n".join(_wrap(_summary_lines(session, max_rows, width) + _made_lines(session, width), width)) + "\n"
    for also in range(ALSO_LINES, -1, -1):  # the ranked "also:" findings go first, from the last
        out = _wrap(_summary_lines(session, max_rows, width, screen, also), width)
        if len(out) <= SCREEN_LINES:
            break
    return "\n".join(out) + "\n"


def _made_lines(session: Session, width: int) -> list[str]:
    """How the run was made, and the repro command split with ``\\`` continuations so it stays
    copyable at any width."""
    lines = ["", f"  made with: {fmt.terminal_safe(how_made.provenance_summary(session))}"]
    words = [fmt.terminal_safe(w) for w in how_made.repro_words(session)]
    if not words:
        return lines
    lines.append("  repro (in the run's working directory):")
    current = "    "
    for w in words:
        if current.strip() and len(current) + len(w) + 3 > width:
            lines.append(_ROW + current + " \\")
            current = "      "
        current += ("" if not current.strip() else " ") + w
    lines.append(_ROW + current)
    return lines


def _wrap(lines: list[str], width: int) -> list[str]:
    out: list[str] = []
    for line in lines:
        if line.startswith(_ROW) or len(line) <= width:
            out.append(line.removeprefix(_ROW))
            continue
        lead = len(line) - len(line.lstrip(" "))
        out += textwrap.wrap(line.lstrip(" "), width, initial_indent=" " * lead, subsequent_indent=" " * (lead + 4),
                             break_on_hyphens=False, break_long_words=True) or [""]
    return out


def _frames_table(shown: list[CompiledFrame], width: int) -> list[str]:
    """The frames, the frame column wrapped inside itself (never cut) to keep the table within
    ``width``; where the frame names would wrap, the count columns that are 0 in every row go (the
    totals line under the table still says them)."""
    facts = frame_facts(TERMINAL, shown)
    headers = ["id", "frame", "time", *(c.short for c in facts)]
    rows = [_frame_row(f, facts) for f in shown]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    if width < NARROW:  # id, frame and time: the counts are in the totals line and the files
        keep = [i for i, h in enumerate(headers) if h in ("id", "frame", "time")]
        headers, rows = [headers[i] for i in keep], [[r[i] for i in keep] for r in rows]
    elif sum(widths) + 2 * (len(widths) - 1) > width - 2:
        zero = [i for i, c in enumerate(facts, 3) if c.key in _DROPPABLE and rows and all(r[i] == "0" for r in rows)]
        headers = [h for i, h in enumerate(headers) if i not in zero]
        rows = [[c for i, c in enumerate(r) if i not in zero] for r in rows]
    return fmt.table(headers, rows, "ll" + "r" * (len(headers) - 2), width=width - 2, wrap=1)


#: the first screen's summary, at most (a run adds its "profiling" and "wrote" lines and a blank one:
#: 30 in all, so the verdict is on an 80x30 screen); the ranked "also:" findings give way beyond it
SCREEN_LINES = 27
#: the ranked findings the verdict lists after the hottest one ("also:")
ALSO_LINES = 3


def _summary_lines(session: Session, max_rows: int, width: int, screen: bool = False,
                   also: int = ALSO_LINES) -> list[str]:
    run = session.run
    lines: list[str] = []
    t = totals(session)
    total = float(t["compile_s"] or 0.0)
    if session.capture.source == "torch_trace":
        lines.append(
            f"dynaprof: imported TORCH_TRACE log {fmt.terminal_safe(how_made.script_path(run))}; "
            f"torch {run.torch_version or '?'}"
            + ("" if run.complete else " (the log ends mid-record: truncated?)")
        )
    else:
        status = fmt.run_outcome(run.end_reason, run.exit_status)
        # on the first screen "dynaprof: profiling ..." has just been said: the run's line goes without it
        lines.append(
            f"{'' if screen else 'dynaprof: '}{fmt.terminal_safe(how_made.script_path(run))} {status} after "
            f"{fmt.seconds(run.wall_s)}; torch {run.torch_version or '?'}, {run.device or 'device ?'}"
        )
    if not session.frames:
        lines.append("  no torch.compile compilation happened in this run (nothing to profile)")
        return lines
    frames = frames_by_time(session)
    shown, rest = frames[:max_rows], frames[max_rows:]
    lines.append("")
    lines += [_ROW + "  " + row for row in _frames_table(shown, width)]
    if rest:
        rest_s = sum(f.compile_time_s or 0.0 for f in rest)
        lines.append(f"  ... and {fmt.plural(len(rest), 'more frame')} ({fmt.seconds(rest_s)})")
    # one compiled frame on the first screen: its row says the total (restarts and breaks are its
    # columns where not 0)
    if not (screen and len(frames) == 1 and not t["failed"] and not session.repeats):
        lines.append("")
        lines.append(
            f"  total: {_n(t['frames'], 'compiled frame')}, {fmt.seconds(total)}, "
            f"{_n(t['restarts'], 'restart')}, {_n(t['graph_breaks'], 'graph break')}, {_n(t['guards'], 'guard')}"
            + (f", {t['failed']} failed" if t["failed"] else "")
        )
    if (reps := repeat_summary(session)) is not None:
        lines.append(f"  {reps}")
    if kinds := compile_by_kind_text(session):
        lines.append(f"  compile by kind: {kinds}")
    if (cache := cache_line(cache_totals(session.frames))) is not None:
        lines.append(f"  {cache}")
    lines += ["  " + fmt.terminal_safe(f"cache: {text}") for text in cache_section.run_lines(session, 3)]
    for f in [f for f in frames if f.status == "failed"][:3]:
        lines.append("  failed: " + fmt.terminal_safe(failure_text(f)))
    table = session_cause_table(session, screen_cause_rows(max_rows))
    if table is not None and session.samples is not None:
        lines += _cause_phase_lines(table, width, samples_text(session.samples))
    elif session.capture.sampler == "none" and session.capture.source == "live":
        lines.append("  (sampling was off: no attribution; run without --sampler none to see where time went)")
    para = parametrization_summary(session)
    if para is not None and not (screen and table is not None and session.samples is not None):
        lines.append("  " + fmt.terminal_safe(parametrized_text(*para)))
    return lines + _verdict_lines(session, screen, also)


def _verdict_lines(session: Session, screen: bool, also_rows: int = ALSO_LINES) -> list[str]:
    """The verdict, what to try, what else (``also_rows`` ranked findings; the rest are counted), and
    the notes that change how the numbers read."""
    lines = [""]
    found = findings(session)
    lines.append(f"  hottest: {fmt.terminal_safe(found[0].text if found else hottest(session, found))}")
    if found and found[0].remedy:
        lines.append(f"    try: {fmt.terminal_safe(found[0].remedy)}")
    # the counterfactual run's comparison was asked for (--counterfactual): shown however it ranks
    ranked = found[1 : 1 + ALSO_LINES]
    also = ranked[:also_rows] + [f for f in found[1 + ALSO_LINES :] if f.key in ("counterfactual", "replay")]
    for extra in also:
        lines.append(f"    also: {fmt.terminal_safe(extra.text)}")
    if (overlap := overlap_note(found[:1] + also, session.total_compile_s)) is not None:
        lines.append(f"    ({overlap})")
    notes, left = first_screen_notes(session)
    for w in notes[:5]:
        lines.append(f"  note: {fmt.one_line(fmt.terminal_safe(w), 400)}")
    left += max(0, len(notes) - 5)
    more = [fmt.plural(len(ranked) - also_rows, "more finding")] if len(ranked) > also_rows else []
    more += [fmt.plural(left, "more note")] if left else []
    if screen:  # the first screen leaves how the run was made to the files
        more.append("how it was made, the repro")
    if more:
        lines.append(f"  ({', '.join(more)}: in summary.md and report.html)")
    return lines


def _n(v: float | int | None, noun: str) -> str:
    """``1 restart``, ``3 restarts``, ``? guards`` (unknown): a total, a float in ``totals``."""
    return fmt.plural(None if v is None else int(v), noun)


#: the frames table's count columns that go where the frame names would wrap and every row's is 0
_DROPPABLE = ("restarts", "graph_breaks")

#: the summary's width; the cause x phase table fits in it
WIDTH = 100


def cause_phase_lines(session: Session, width: int = WIDTH, max_rows: int = TABLE_ROWS) -> list[str]:
    """The cause x phase table (``analysis.cause_table``, ``screen_cause_rows(max_rows)`` rows), indented
    for the summary; nothing for sessions without the cause view (no samples, schema 1, TORCH_TRACE
    imports)."""
    table = session_cause_table(session, screen_cause_rows(max_rows))
    if table is None:
        return []
    return [line.removeprefix(_ROW) for line in _cause_phase_lines(table, width)]


#: the narrowest the cause column gets before a phase column is merged into "other phases"
MIN_CAUSE_COLUMN = 30
#: the phase columns kept beside a cause column of ``MIN_CAUSE_COLUMN``; a further one is kept only
#: where the causes' labels still fit on one line (up to ``MAX_CAUSE_COLUMN``): at 100 columns six
#: phases wrapped most labels of a real model in two
KEPT_PHASES = 2
MAX_CAUSE_COLUMN = 48


def _shared_via(labels: list[str]) -> str:
    """`` via Parametrization`` where every label that names one ends with it, else ``""``."""
    vias = {lb[lb.index(" via "):] for lb in labels if " via " in lb}
    return vias.pop() if len(vias) == 1 else ""
#: below this width the cause table is a list: cause, total and %, its phases left to the files
NARROW = 60
#: the header of the column that holds the phases a narrow terminal has no room for
OTHER_PHASES = "other ph."


def _fit_columns(table: CauseTable, width: int) -> tuple[list[Column], list[Column]]:
    """The phase columns that fit ``width`` beside a cause column of ``MIN_CAUSE_COLUMN``, total and
    %: those holding the most time first; and the rest, merged into one "other phases" column."""
    def w(col: Column) -> int:
        cells = [cause_cell(r.cells.get(col.key, 0.0)) for r in (*table.rows, table.totals)]
        return max(len(col.short), *map(len, cells)) + 2

    fixed = MIN_CAUSE_COLUMN + len(fmt.seconds(table.totals.total)) + 2 + 6  # total and %
    ranked = sorted(table.columns, key=lambda c: (-table.totals.cells.get(c.key, 0.0), c.key))
    labels = max((len(cause_label(r.cause, r.merged)) for r in table.rows), default=0)
    wanted = max(0, min(labels, MAX_CAUSE_COLUMN) - MIN_CAUSE_COLUMN)  # what the labels need beyond the least
    if fixed + wanted + sum(map(w, ranked)) <= width:
        return list(table.columns), []
    if width < NARROW:  # a list of causes, total and share: the phases are in the files
        return [], list(table.columns)
    room = width - fixed - (len(OTHER_PHASES) + 2)
    chosen: list[Column] = []
    for col in ranked:
        if w(col) <= room and (len(chosen) < KEPT_PHASES or room - w(col) >= wanted):
            chosen.append(col)
            room -= w(col)
    keep = [c for c in table.columns if c in chosen]
    return keep, [c for c in table.columns if c not in chosen]


def _cause_phase_lines(table: CauseTable, width: int, sampled: str = "sampled") -> list[str]:
    indent = 4
    cols, merged = _fit_columns(table, width - indent)

    other = bool(merged) and bool(cols)  # a list (no phase column at all) has no "other" column either

    def cells(values: dict[str, float]) -> list[str]:
        out = [cause_cell(values.get(c.key, 0.0)) for c in cols]
        return out + ([cause_cell(sum(values.get(c.key, 0.0) for c in merged))] if other else [])

    blank = [""] * (len(cols) + (1 if other else 0))
    body: list[tuple[str, list[str]]] = []
    for r in table.rows:
        body.append((cause_label(r.cause, r.merged),
                     [*cells(r.cells), fmt.seconds(r.total), fmt.pct(r.total, table.compile_s)]))
        via = _shared_via([d.label for d in r.details])  # said once by the verdict, not on each line
        for d in r.details:
            body.append(("  " + d.label.removesuffix(via), [*blank, fmt.seconds(d.seconds),
                                                            fmt.pct(d.seconds, table.compile_s)]))
        if r.more_details[0]:
            n, secs = r.more_details
            body.append((f"  +{n} more", [*blank, fmt.seconds(secs), fmt.pct(secs, table.compile_s)]))
    t = table.totals
    body.append(("all causes", [*cells(t.cells), fmt.seconds(t.total), fmt.pct(t.total, table.compile_s)]))
    headers = [c.short for c in cols] + ([OTHER_PHASES] if other else []) + ["total", "%"]
    # a label too long for its column wraps inside it, its numbers on its first line (fmt.table)
    rows = [[fmt.terminal_safe(lb) if not lb.startswith("  ") else "  " + fmt.terminal_safe(lb[2:]), *cells]
            for lb, cells in body]
    lines = ["", f"  where compile time went, by cause and phase ({sampled}):"]
    lines += [_ROW + " " * indent + row
              for row in fmt.table(["cause", *headers], rows, "l" + "r" * len(headers), width=width - indent, wrap=0)]
    if other:
        lines.append(" " * indent + f"{OTHER_PHASES} = " + ", ".join(c.short for c in merged)
                     + " (every phase in summary.md and report.html)")
    elif merged:
        lines.append(" " * indent + "by phase: in summary.md and report.html")
    if waste := restart_waste_text(table):
        lines.append(" " * indent + fmt.terminal_safe(waste))
    return lines


def render_summary_file(ctx: RenderContext) -> Files:
    return {"summary.txt": summary_text(ctx.session, ctx.options.max_rows)}
