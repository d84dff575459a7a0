"""The compact summary printed at the end of ``dynaprof run`` (and saved as summary.txt)."""

from __future__ import annotations

import textwrap

from dynaprof import fmt
from dynaprof.analysis import how_made
from dynaprof.analysis.cache_summary import cache_line
from dynaprof.analysis.cause_table import OTHER_CAUSES, CauseTable, session_cause_table
from dynaprof.analysis.findings import findings, hottest, overlap_note, parametrization_summary, totals
from dynaprof.analysis.notes import first_screen_notes
from dynaprof.analysis.repeats import repeat_summary
from dynaprof.model.cache import cache_totals
from dynaprof.model.session import (
    KIND_LABELS,
    CompiledFrame,
    Session,
    display_id,
    display_name,
)
from dynaprof.render import cache_section
from dynaprof.render.base import Files, RenderContext

#: table rows carry this mark until ``_wrap``: they are sized to the width already, never wrapped
_ROW = "\x00"


def _frame_row(f: CompiledFrame) -> list[str]:
    name, filename, lineno = display_name(f)
    where = fmt.terminal_safe(f"{name} ({fmt.location(filename, lineno)})")
    status = "" if f.status == "ok" else f" [{f.status}]"
    return [
        fmt.terminal_safe(display_id(f)),
        where + status,
        fmt.seconds(f.compile_time_s),
        fmt.count(f.calls),
        str(f.restarts),
        str(f.graph_breaks),
        fmt.count(f.guard_count),
        fmt.count(f.inlined_calls),
    ]


def summary_text(session: Session, max_rows: int = 12, width: int | None = None) -> str:
    """The summary, every line at most ``width`` columns (default ``WIDTH``): prose is wrapped with
    a hanging indent, tables shrink their text columns."""
    width = WIDTH if width is None else max(40, width)
    lines = _summary_lines(session, max_rows, width) + _made_lines(session, width)
    return "\n".join(_wrap(lines, width)) + "\n"


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
    """The frames, the frame column wrapped (never cut) to keep the table within ``width``."""
    return fmt.table(["compile id", "frame", "time", "calls", "restarts", "breaks", "guards", "inlined"],
                     [_frame_row(f) for f in shown], "llrrrrrr", width=width - 2, wrap=1)


def _summary_lines(session: Session, max_rows: int, width: int) -> list[str]:
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
        lines.append(
            f"dynaprof: {fmt.terminal_safe(how_made.script_path(run))} {status} after {fmt.seconds(run.wall_s)}; "
            f"torch {run.torch_version or '?'}, {run.device or 'device ?'}"
        )
    if not session.frames:
        lines.append("  no torch.compile compilation happened in this run (nothing to profile)")
        return lines
    frames = sorted(session.frames, key=lambda f: -(f.compile_time_s or 0.0))
    shown, rest = frames[:max_rows], frames[max_rows:]
    lines.append("")
    lines += [_ROW + "  " + row for row in _frames_table(shown, width)]
    if rest:
        rest_s = sum(f.compile_time_s or 0.0 for f in rest)
        lines.append(f"  ... and {fmt.plural(len(rest), 'more frame')} ({fmt.seconds(rest_s)})")
    lines.append("")
    lines.append(
        f"  total: {_n(t['frames'], 'compiled frame')}, {fmt.seconds(total)} compile, "
        f"{_n(t['restarts'], 'restart')}, {_n(t['graph_breaks'], 'graph break')}, {_n(t['guards'], 'guard')}"
        + (f", {t['failed']} failed" if t["failed"] else "")
    )
    if (reps := repeat_summary(session)) is not None:
        lines.append(f"  {reps}")
    kinds = session.compile_by_kind()
    if set(kinds) - {"forward"}:
        lines.append("  compile by kind: " + ", ".join(
            f"{KIND_LABELS.get(k, k)} {fmt.seconds(v)} ({fmt.pct(v, total)})" for k, v in kinds.items()))
    if (cache := cache_line(cache_totals(session.frames))) is not None:
        lines.append(f"  {cache}")
    lines += ["  " + fmt.terminal_safe(f"cache: {text}") for text in cache_section.run_lines(session, 3)]
    for f in [f for f in frames if f.status == "failed"][:3]:
        where = f" at {fmt.location(f.fail_filename, f.fail_lineno)}" if f.fail_filename else ""
        reason = fmt.one_line(f.fail_reason or "", 120)
        lines.append(fmt.terminal_safe(f"  failed: {display_id(f)} {f.fail_type or '?'}{where}: {reason}"))
    table = session_cause_table(session, 8)
    if table is not None and session.samples is not None:
        s = session.samples
        rate = f"{s.achieved_hz:.0f} Hz" if s.achieved_hz else "?"
        lines += _cause_phase_lines(table, width)
        lines.append(f"    from {s.count:,} samples at {rate}")
    elif session.capture.sampler == "none" and session.capture.source == "live":
        lines.append("  (sampling was off: no attribution; run without --sampler none to see where time went)")
    para = parametrization_summary(session)
    if para is not None:
        n, secs, items = para
        props = ", ".join(f"{fmt.terminal_safe(label)} x{k}" for label, k in items[:6])
        noun = "property" if n == 1 else "properties"
        lines.append(f"  parametrized {noun} ({n:,}, measured exactly): {props}; {fmt.seconds(secs)}")
    lines.append("")
    found = findings(session)
    lines.append(f"  hottest: {fmt.terminal_safe(found[0].text if found else hottest(session, found))}")
    if found and found[0].remedy:
        lines.append(f"    try: {fmt.terminal_safe(found[0].remedy)}")
    # the counterfactual run's comparison was asked for (--counterfactual): shown however it ranks
    also = found[1:4] + [f for f in found[4:] if f.key in ("counterfactual", "replay")]
    for extra in also:
        lines.append(f"    also: {fmt.terminal_safe(extra.text)}")
    if (overlap := overlap_note(found[:1] + also, session.total_compile_s)) is not None:
        lines.append(f"    ({overlap})")
    notes, left = first_screen_notes(session)
    for w in notes[:5]:
        lines.append(f"  note: {fmt.one_line(fmt.terminal_safe(w), 400)}")
    left += max(0, len(notes) - 5)
    if left:
        lines.append(f"  ({fmt.plural(left, 'more note')} in report.html and summary.md)")
    return lines


def _n(v: float | int | None, noun: str) -> str:
    """``1 restart``, ``3 restarts``, ``? guards`` (unknown): a total, a float in ``totals``."""
    return fmt.plural(None if v is None else int(v), noun)


#: the summary's width; the cause x phase table fits in it
WIDTH = 100


def _cell(v: float) -> str:
    return fmt.seconds(v) if v > 0 else ""


def cause_phase_lines(session: Session, width: int = WIDTH, max_rows: int = 8) -> list[str]:
    """The cause x phase table (``analysis.cause_table``), indented for the summary; nothing for
    sessions without the cause view (no samples, schema 1, TORCH_TRACE imports)."""
    table = session_cause_table(session, max_rows)
    if table is None:
        return []
    return [line.removeprefix(_ROW) for line in _cause_phase_lines(table, width)]


def _cause_phase_lines(table: CauseTable, width: int) -> list[str]:
    cols = table.columns
    body: list[tuple[str, list[str]]] = []
    for r in table.rows:
        label = f"{OTHER_CAUSES} ({r.folded})" if r.cause == OTHER_CAUSES else r.cause
        body.append((label, [_cell(r.cells.get(c.key, 0.0)) for c in cols]
                     + [fmt.seconds(r.total), fmt.pct(r.total, table.compile_s)]))
        for d in r.details:
            body.append(("  " + d.label,
                         [""] * len(cols) + [fmt.seconds(d.seconds), fmt.pct(d.seconds, table.compile_s)]))
        if r.more_details[0]:
            n, secs = r.more_details
            body.append((f"  +{n} more", [""] * len(cols) + [fmt.seconds(secs), fmt.pct(secs, table.compile_s)]))
    t = table.totals
    body.append(("all causes", [_cell(t.cells.get(c.key, 0.0)) for c in cols]
                 + [fmt.seconds(t.total), fmt.pct(t.total, table.compile_s)]))
    headers = [c.short for c in cols] + ["total", "%"]
    indent = 4
    # a label too long for its column stands on a line of its own above its numbers (fmt.table), never cut
    rows = [[fmt.terminal_safe(lb) if not lb.startswith("  ") else "  " + fmt.terminal_safe(lb[2:]), *cells]
            for lb, cells in body]
    lines = ["", "  where compile time went, by cause and phase (sampled seconds; % of compile):"]
    lines += [_ROW + " " * indent + row
              for row in fmt.table(["cause", *headers], rows, "l" + "r" * len(headers), width=width - indent, wrap=0)]
    if table.restart_waste > 0:
        worst = max(((r.cause, r.wasted) for r in table.rows if r.wasted > 0), key=lambda kv: kv[1], default=None)
        text = f"restart waste: {fmt.seconds(table.restart_waste)} of this in attempts that restarts threw away"
        if worst:
            text += f" (most: {fmt.terminal_safe(worst[0])})"
        lines.append(" " * indent + text)
    return lines


def render_summary_file(ctx: RenderContext) -> Files:
    return {"summary.txt": summary_text(ctx.session, ctx.options.max_rows)}
