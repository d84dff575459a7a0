"""``summary.md``: a GitHub-flavoured Markdown summary to paste into a pull-request comment.

The summary always stays under ``MAX_CHARS`` (GitHub refuses comments over 65,536 characters):
tables show ``RenderOptions.max_rows`` rows and elide the rest with a count, and when the result
is still too long the row limit shrinks and, as a last resort, trailing sections are dropped.
Everything that comes from user code goes through ``md_escape`` (GFM renders inline HTML, so an
unescaped ``<img onerror=...>`` in a function name would be live in the comment).

``md_escape``, ``md_table``, ``details`` and ``md_code_block`` are the Markdown pieces the other
Markdown outputs (``compare.md``, the multi-rank pages, the PR comment) write with too; what the
reports say before it is formatted (frames, reasons, cause labels) is ``render.report_facts``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from functools import partial

from dynaprof import fmt
from dynaprof.analysis import how_made
from dynaprof.analysis.cache_summary import cache_line
from dynaprof.analysis.cause_table import cause_rows, session_cause_table
from dynaprof.analysis.derived import Derived
from dynaprof.analysis.findings import Finding, findings, hottest, totals
from dynaprof.analysis.repeats import frame_medians, repeat_stats, repeat_summary
from dynaprof.model.cache import cache_totals
from dynaprof.model.session import Session, display_name
from dynaprof.render import cache_section
from dynaprof.render.base import TABLE_ROWS, Files, RenderContext
from dynaprof.render.output_names import SUMMARY_MD, report_links
from dynaprof.render.report_facts import (
    MARKDOWN,
    cause_cell,
    cause_label,
    cause_table_notes,
    frame_facts,
    frame_id,
    frame_time,
    frames_by_time,
    graph_break_reasons,
    parametrized_properties,
    restart_reasons,
    sampler_text,
    sampling_note,
    traced_function_times,
)

#: hard cap on the summary's length (GitHub's comment limit is 65,536)
MAX_CHARS = 60_000
#: longest user text shown in one table cell, before escaping
CELL_CHARS = 120

_MD_PUNCT = re.compile(r"([\\`*_\[\]{}#|~@$!])")
_LEADING = re.compile(r"^(\d*)([+\-=.)])(?=\s|$)")


def md_escape(text: object, limit: int | None = CELL_CHARS) -> str:
    """User text as inert Markdown on one line: whitespace collapsed (newlines become spaces),
    cut to ``limit`` characters, HTML-significant characters as entities, Markdown punctuation
    (table pipes, backticks, emphasis, links, mentions, math) backslash-escaped."""
    flat = fmt.terminal_safe(str(text))  # no control characters or bidi overrides: `cat` replays them
    flat = fmt.one_line(flat, limit) if limit else flat
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    flat = _MD_PUNCT.sub(r"\\\1", flat)
    return _LEADING.sub(r"\1\\\2", flat)  # "- x", "1. x" would start a list


def md_code_block(text: str, lang: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run inside ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]], total: int | None = None,
             noun: str = "rows", align: str | None = None) -> str:
    """A GFM table; cells must already be escaped. ``total`` > len(rows) adds an elision line.
    ``align`` holds one character per column: ``l`` or ``r``."""
    align = align or "l" * len(header)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    if total is not None and total > len(rows):
        lines.append(f"\n_... and {total - len(rows):,} more {noun}_")
    return "\n".join(lines)


def details(summary: str, body: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


#: said under restart-reason tables where a count is unknown
SET_NOTE = ("torch records a frame's restart reasons as a set: where a frame restarted more often than it has "
            "reasons, how many restarts each reason caused is unknown (?)")


def totals_line(session: Session) -> str:
    t = totals(session)
    frames = int(t["frames"] or 0)
    parts = [
        f"{fmt.seconds(session.total_compile_s)} compiling",
        f"{fmt.plural(frames, 'compiled frame')}",
        _noun(_int(t["restarts"]), "restart"),
        _noun(_int(t["graph_breaks"]), "graph break"),
        _noun(_int(t["guards"]), "guard"),
    ]
    if t["failed"]:
        parts.append(f"{fmt.count(_int(t['failed']))} failed")
    if session.run.wall_s is not None:
        parts.append(f"run wall time {fmt.seconds(session.run.wall_s)}")
    return " · ".join(parts)


def _noun(n: int | None, noun: str) -> str:
    return fmt.plural(n, noun)


def _int(v: float | int | None) -> int | None:
    return None if v is None else int(v)


# ---------------------------------------------------------------------------------------------
# sections


def _header(s: Session, rows: int, made: Collection[str] | None = None) -> str:
    status = "" if s.run.complete else f" (incomplete: {md_escape(s.run.end_reason)})"
    every = findings(s)  # once: the verdict, the remedy and the rest all come from it
    lines = [f"### dynaprof: {md_escape(how_made.script_path(s.run))}{status}", "",
             f"**Verdict:** {md_escape(hottest(s, every), 600)}", "", *_remedy(every),
             f"**Totals:** {totals_line(s)}", ""]
    if (reps := repeat_summary(s)) is not None:
        lines += [f"**Repeats:** {md_escape(reps, 400)}", ""]
    if (cache := cache_line(cache_totals(s.frames))) is not None:
        lines += [f"**Cache:** {md_escape(cache, 400)}", ""]
    lines.append(" · ".join(f"[{label}]({path})" for label, path in report_links(s, made)))
    found = every[1:]  # the first one is the verdict
    if found:
        lines += ["", "**Also:**", ""]
        lines += [f"- {md_escape(f.text, 400)}" for f in found[:rows]]
    return "\n".join(lines)


def _frames(s: Session, rows: int) -> str:
    if not s.frames:
        return ""
    ordered = frames_by_time(s)
    shown = [(f, display_name(f)) for f in ordered[:rows]]
    facts = frame_facts(MARKDOWN, s.frames)  # the --time-calls columns where any frame has them
    body = [[md_escape(frame_id(f)), f"{md_escape(name)} ({md_escape(fmt.location(filename, lineno))})",
             frame_time(f), *(c.text(f) for c in facts)]
            for f, (name, filename, lineno) in shown]
    table = md_table(["compile id", "location", "time", *(md_escape(c.header) for c in facts)], body,
                     len(ordered), "frames", "llr" + "r" * len(facts))
    return f"#### Compiled frames (slowest first)\n\n{table}"


def _remedy(found: list[Finding]) -> list[str]:
    return [f"**Try:** {md_escape(found[0].remedy, 300)}", ""] if found and found[0].remedy else []



def _causes(s: Session, rows: int) -> str:
    table = session_cause_table(s, cause_rows(rows))
    if table is None:
        return ""
    waste = table.restart_waste > 0
    header = ["cause", *(md_escape(c.label) for c in table.columns), "total", "% of compile"]
    header += ["restart waste"] if waste else []

    def line(label: str, cells: dict[str, float] | None, total: float, wasted: float) -> list[str]:
        out = [label, *(cause_cell(cells.get(c.key, 0.0)) if cells is not None else "" for c in table.columns),
               fmt.seconds(total), fmt.pct(total, table.compile_s)]
        return out + ([fmt.seconds(wasted) if wasted > 0 else ""] if waste else [])

    body = []
    for r in table.rows:
        body.append(line(md_escape(cause_label(r.cause, r.merged)), r.cells, r.total, r.wasted))
        body += [line("↳ " + md_escape(d.label), None, d.seconds, 0.0) for d in r.details]
        if r.more_details[0]:
            body.append(line(f"↳ +{r.more_details[0]:,} more", None, r.more_details[1], 0.0))
    t = table.totals
    body.append(line("**all causes**", t.cells, t.total, t.wasted))
    align = "l" + "r" * (len(header) - 1)
    notes = [md_escape(n, 600) for n in cause_table_notes(table)] + [sampling_note(s)]
    text = md_table(header, body, align=align) + "\n\n" + " ".join(n for n in notes if n)
    return details("Where compile time went, by cause and phase", text, True)


def _properties(s: Session, rows: int) -> str:
    props = parametrized_properties(s)
    if not props:
        return ""
    body = [[md_escape(p.label), f"{p.count:,}", f"{p.instances:,}", fmt.seconds(p.seconds)] for p in props[:rows]]
    table = md_table(["property", "times traced", "instances", "seconds"], body, len(props), "properties", "lrrr")
    return details(f"Parametrized {'property' if len(props) == 1 else 'properties'} ({len(props):,})", table, True)


def _traced(s: Session, rows: int, derived: Derived | None = None) -> str:
    times = traced_function_times(s, derived)
    if not times:
        return ""
    body = [[md_escape(t.func.name + (" (property)" if t.func.kind == "property" else "")),
             md_escape(fmt.location(t.func.filename, t.func.lineno)), fmt.seconds(t.self_s),
             fmt.seconds(t.inclusive_s)] for t in times[:rows]]
    table = md_table(["traced user function", "location", "self", "inclusive"], body, len(times), "functions", "llrr")
    return details("Top traced user functions (sampled)", table)


def _reasons(s: Session, rows: int) -> str:
    out = []
    rr = restart_reasons(s)
    if rr:
        body = [[md_escape(r), fmt.count(n), md_escape(", ".join(ids[:3]) + (" ..." if len(ids) > 3 else ""))]
                for r, n, ids in rr[:rows]]
        restarts = sum(f.restarts for f in s.frames)
        note = f"\n\n{SET_NOTE}." if any(n is None for _, n, _ in rr) else ""
        out.append(details(f"Restart reasons ({_noun(restarts, 'restart')})",
                           md_table(["reason", "restarts", "frames"], body, len(rr), "reasons", "lrl") + note))
    failed = [f for f in frames_by_time(s) if f.status == "failed"]
    if failed:
        body = [[md_escape(frame_id(f)), md_escape(f.fail_type or "?"),
                 md_escape(fmt.location(f.fail_filename, f.fail_lineno)) if f.fail_filename else "",
                 md_escape(f.fail_reason or "", 300)] for f in failed[:rows]]
        out.append(details(f"Failed compiles ({len(failed):,})",
                           md_table(["compile id", "failure", "user code", "reason"], body, len(failed),
                                    "failures", "llll")))
    gb = graph_break_reasons(s)
    if gb:
        body = [[md_escape(r), md_escape(loc), f"{n:,}"] for r, loc, n in gb[:rows]]
        out.append(details(f"Graph break reasons ({sum(n for _, _, n in gb):,})",
                           md_table(["reason", "user location", "count"], body, len(gb), "reasons", "llr")))
    return "\n\n".join(out)


def _repeats(s: Session, rows: int) -> str:
    if repeat_stats(s) is None:
        return ""
    body = [[f"{r.index}" + (" (this report)" if r.index == s.run.repeat else ""), fmt.seconds(r.compile_s),
             fmt.seconds(r.wall_s), f"{len(r.frames):,}", "cold" if r.cold else "warm",
             "" if r.exit_status is None else str(r.exit_status)] for r in s.repeats[:rows]]
    per_frame = frame_medians(s)
    frame_body = [[md_escape(k), fmt.seconds(m), fmt.seconds(lo), fmt.seconds(hi), f"{n:,}"]
                  for k, (m, lo, hi, n) in sorted(per_frame.items(), key=lambda kv: -kv[1][0])[:rows]]
    return details(f"Repeats ({len(s.repeats):,})",
                   md_table(["repeat", "compile", "wall", "frames", "caches", "exit"], body, len(s.repeats),
                            "repeats", "lrrrll")
                   + "\n\n" + md_table(["frame key", "median", "min", "max", "runs"], frame_body, len(per_frame),
                                        "frames", "lrrrr"))


def _environment(s: Session, rows: int) -> str:
    r = s.run
    items = [
        *how_made.provenance_facts(s)[1:], ("device", r.device or "?"), ("sampler", sampler_text(s)),
        ("started", r.start_time), ("exit", fmt.exit_fact(r.end_reason, r.exit_status)),
    ]
    if r.world_size:
        items.append(("rank", f"{r.rank} of {r.world_size}"))
    if s.capture.source != "live":
        items.append(("source", s.capture.source))
    body = [[k, md_escape(v, 2000)] for k, v in items]
    return details("How it was made", md_table(["setting", "value"], body))


def _notes(s: Session, rows: int) -> str:
    """Every note of the run (the terminal shows only those that change how its numbers read)."""
    notes = s.capture.warnings
    if not notes:
        return ""
    more = f"\n- ... and {len(notes) - rows:,} more in session.json" if len(notes) > rows else ""
    return details(f"Notes ({len(notes):,})", "\n".join(f"- {md_escape(n, 600)}" for n in notes[:rows]) + more)


def _reproduce(s: Session, rows: int) -> str:
    cmd = how_made.repro_line(s)
    if len(cmd) > 2000:
        cmd = cmd[:2000] + " ..."
    return "Reproduce (in the run's working directory):\n\n" + md_code_block(cmd, "sh")


def _cache(s: Session, rows: int) -> str:
    lines = cache_section.run_lines(s, rows)  # served from cache, misses explained, bypasses
    return f"#### {cache_section.TITLE}\n\n" + "\n".join(f"- {md_escape(t, 600)}" for t in lines) if lines else ""


_SECTIONS: tuple[Callable[[Session, int], str], ...] = (
    _causes, _frames, _repeats, _properties, _traced, _reasons, _cache, _notes, _environment, _reproduce,
)


def summary_markdown(
    session: Session,
    max_rows: int = TABLE_ROWS,
    max_chars: int = MAX_CHARS,
    made: Collection[str] | None = None,
    derived: Derived | None = None,
) -> str:
    """The summary text, guaranteed shorter than ``max_chars``; it links the files in ``made``
    (``files.report_links``)."""
    rows = max(1, max_rows)
    d = derived or Derived(session)
    sections = [partial(_traced, derived=d) if section is _traced else section for section in _SECTIONS]
    while True:
        parts = [p for p in (_header(session, rows, made), *(section(session, rows) for section in sections)) if p]
        text = "\n\n".join(parts) + "\n"
        if len(text) < max_chars or rows <= 3:
            break
        rows = max(3, rows // 2)
    note = "\n\n_(summary shortened to fit a PR comment; see report.html for everything)_\n"
    while len(text) >= max_chars and len(parts) > 1:
        parts.pop(-2 if len(parts) > 2 else -1)  # keep the reproduce command as long as possible
        text = "\n\n".join(parts) + note
    if len(text) >= max_chars:  # unreachable with bounded cells; belt and braces
        text = text[: max_chars - len(note) - 1].rsplit("\n", 1)[0] + note
    return text


def render_markdown(ctx: RenderContext) -> Files:
    return {SUMMARY_MD: summary_markdown(ctx.session, ctx.options.max_rows, made=ctx.made, derived=ctx.derived)}
