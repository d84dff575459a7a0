"""``report.html``: one self-contained page (inline CSS, JS and SVG; no network at all).

The page leads with the verdict and totals, then findings, the attribution, the flamegraphs
(their SVG inlined: each carries its own zoom/search script, written to work inlined, several
per page), the call graph, sortable tables and one collapsible section per compile. A
Content-Security-Policy forbids every fetch, so the file behaves the same offline, attached to a
PR, or opened from a CI artifact. Text from user code is HTML-escaped everywhere (``esc``); the
JSON island escapes ``<``, ``>`` and ``&`` (``script_json``).
"""

from __future__ import annotations

import html
import importlib
import json
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, cast

from dynaprof import fmt
from dynaprof.analysis.cause_table import session_cause_table
from dynaprof.analysis.derived import Derived
from dynaprof.analysis.findings import findings, hottest, totals
from dynaprof.model.session import CATEGORY_LABELS, CompiledFrame, Session, display_name
from dynaprof.render import markdown as md
from dynaprof.render.base import Deferred, Files, RenderContext, Renderer
from dynaprof.render.colours import category_colour
from dynaprof.render.files import CALLGRAPH_SVG, REPORT_HTML

__all__ = ["Col", "Markup", "esc", "inline_svg", "kpi", "num", "page", "render_html", "script_json", "secs", "section",
           "table"]

CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "font-src data:; base-uri 'none'; form-action 'none'")
#: tables longer than this show their heaviest rows and a count of the rest
MAX_TABLE_ROWS = 2000

_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_PROLOG = re.compile(r"^.*?(?=<svg[\s>])", re.S)


class Markup(str):
    """Text that is already HTML (built here from escaped parts); ``esc`` leaves it alone."""


def esc(text: object) -> str:
    """HTML-escape text for element content and double- or single-quoted attributes."""
    if isinstance(text, Markup):
        return text
    return html.escape(_INVALID.sub("\ufffd", str(text)), quote=True)


def script_json(obj: Any) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>``, ``&`` and line separators as ``\\uXXXX``."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, sort_keys=True)
    for ch, rep in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, rep)
    return text


def inline_svg(svg: str) -> Markup:
    """An SVG document ready to sit inside HTML: XML declaration, DOCTYPE and comments dropped."""
    return Markup(_PROLOG.sub("", svg, count=1).strip())


@cache
def asset(name: str) -> str:
    return resources.files("dynaprof.render").joinpath(f"assets/{name}").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Col:
    label: str
    numeric: bool = False
    code: bool = False
    nowrap: bool = False  # short code-like cells (compile ids, file:line) that must not break


def table(cols: Sequence[Col], rows: Iterable[Sequence[object]], *, sortable: bool = True, scroll: bool = False,
          total: int | None = None, noun: str = "rows", compact: bool = False) -> str:
    """A table; each cell is text (escaped here), ``Markup``, or a (text, numeric sort key) pair."""
    head = "".join(f'<th{" class=n" if c.numeric else ""}>{esc(c.label)}</th>' for c in cols)
    body: list[str] = []
    for row in rows:
        cells = []
        for c, cell in zip(cols, row, strict=True):
            text, key = cell if isinstance(cell, tuple) else (cell, None)
            key = key if isinstance(key, (int, float)) else None
            cls = "n" if c.numeric else ("code" + " nw" * c.nowrap) if c.code else ""
            attrs = (f' class="{cls}"' if cls else "") + (f' data-sort="{key:.9g}"' if key is not None else "")
            cells.append(f"<td{attrs}>{esc(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    classes = "dp-table" + (" sortable" if sortable else "") + (" compact" if compact else "")
    out = (f'<table class="{classes}"><thead><tr>{head}</tr></thead>'
           f"<tbody>{''.join(body)}</tbody></table>")
    out = f'<div class="{"dp-scroll" if scroll or len(body) > 30 else "dp-x"}">{out}</div>'
    if total is not None and total > len(body):
        out += f'<p class="dp-note">... and {total - len(body):,} more {esc(noun)} not shown</p>'
    return out


def secs(s: float | None) -> tuple[str, float | None]:
    return fmt.seconds(s), s


def num(n: int | None) -> tuple[str, float | None]:
    return fmt.count(n), None if n is None else float(n)


def section(anchor: str, title: str, body: str) -> str:
    return f'<section class="dp-card" id="{esc(anchor)}"><h2>{esc(title)}</h2>{body}</section>'


def page(title: str, header: str, nav: Sequence[tuple[str, str]], body: str, data: Any = None) -> str:
    """The whole document: ``header`` and ``body`` are HTML, ``nav`` (anchor, label) pairs."""
    links = "".join(f'<a href="#{esc(a)}">{esc(label)}</a>' for a, label in nav)
    island = (f'<script type="application/json" id="dp-data">{script_json(data)}</script>\n'
              if data is not None else "")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{esc(title)}</title>\n<style>\n{asset('report.css')}</style>\n</head>\n<body>\n"
        f'{header}\n<nav class="dp-nav">{links}</nav>\n<main>\n{body}\n</main>\n'
        '<footer class="dp-foot">Generated by dynaprof · self-contained: no network access</footer>\n'
        f"{island}<script>\n{asset('report.js')}</script>\n</body>\n</html>\n"
    )


# ---------------------------------------------------------------------------------------------
# report sections


def _header(s: Session) -> str:
    r = s.run
    meta = " · ".join(x for x in (
        f"started {r.start_time}", f"torch {r.torch_version or '?'}", f"Python {r.python_version}",
        f"device {r.device or '?'}", r.platform, "complete" if r.complete else f"incomplete ({r.end_reason})",
    ) if x)
    return (f'<header class="dp-top"><div class="dp-brand">dynaprof · torch.compile compile-time report</div>'
            f"<h1>{esc(fmt.one_line(r.target, 300))}</h1><div class=\"dp-meta\">{esc(meta)}</div></header>")


def kpi(label: str, value: str, detail: str = "") -> str:
    d = f'<div class="d">{esc(detail)}</div>' if detail else ""
    return f'<div class="dp-kpi"><div class="k">{esc(label)}</div><div class="v">{esc(value)}</div>{d}</div>'


def _summary(s: Session) -> str:
    t = totals(s)
    sampled = s.samples
    kpis = [
        kpi("compile time", fmt.seconds(s.total_compile_s),
             f"of {fmt.seconds(s.run.wall_s)} run" if s.run.wall_s is not None else ""),
        kpi("compiled frames", f"{int(t['frames'] or 0):,}",
             f"{int(t['failed'] or 0):,} failed" if t["failed"] else ""),
        kpi("restarts", fmt.count(_i(t["restarts"]))),
        kpi("graph breaks", fmt.count(_i(t["graph_breaks"]))),
        kpi("guards", fmt.count(_i(t["guards"])), "all frames"),
        kpi("samples", f"{sampled.count:,}" if sampled else "none",
             f"{sampled.achieved_hz:,.0f} Hz" if sampled and sampled.achieved_hz else ""),
    ]
    found = findings(s)
    items = "".join(f"<li>{esc(f.text)}</li>" for f in found[1:])
    more = f'<h3>Also</h3><ul class="dp-findings">{items}</ul>' if items else ""
    return section("summary", "Summary",
                   f'<div class="dp-verdict"><b>Verdict</b>{esc(hottest(s))}</div>'
                   f'<div class="dp-kpis">{"".join(kpis)}</div>{more}')


def _i(v: float | int | None) -> int | None:
    return None if v is None else int(v)


def _attribution(s: Session) -> str:
    cats = sorted(((k, v) for k, v in s.attribution.items() if v > 0), key=lambda kv: -kv[1])
    if not cats:
        return section("attribution", "Where compile time went",
                       '<p class="dp-note">No samples: run with a sampler to attribute compile time.</p>')
    total = s.total_compile_s
    top = cats[0][1]
    rows = "".join(
        f'<div><span class="dp-swatch" style="background:{category_colour(k)}"></span>'
        f"{esc(CATEGORY_LABELS.get(k, k))}</div>"
        f'<div class="bar"><span style="width:{100 * v / top:.1f}%;background:{category_colour(k)}"></span></div>'
        f'<div class="n">{esc(fmt.seconds(v))}</div><div class="n">{esc(fmt.pct(v, total))}</div>'
        for k, v in cats)
    sampled = s.samples.seconds if s.samples else 0.0
    note = (f'<p class="dp-note">Sampled {esc(fmt.seconds(sampled))} of {esc(fmt.seconds(total))} compile time; '
            "each sample lands in exactly one category (first matching rule wins).</p>")
    return section("attribution", "Where compile time went", f'<div class="dp-bars">{rows}</div>{note}')


def _causes(s: Session) -> str:
    """The cause x phase table (``analysis.cause_table``); nothing for sessions without it."""
    t = session_cause_table(s, max_rows=25)
    if t is None:
        return ""
    waste = t.restart_waste > 0
    head = "".join(f'<th class=n title="{esc(c.description)}">{esc(c.label)}</th>' for c in t.columns)
    head = f"<th>cause</th>{head}<th class=n>total</th><th class=n>% of compile</th>"
    head += "<th class=n>restart waste</th>" if waste else ""

    def row(label: str, cells: dict[str, float] | None, total: float, wasted: float, cls: str = "") -> str:
        tds = [f'<td class="code">{esc(label)}</td>']
        tds += [f'<td class="n">{esc(fmt.seconds(v)) if v > 0 else ""}</td>'
                for v in ((cells or {}).get(c.key, 0.0) for c in t.columns)]
        tds += [f'<td class="n">{esc(fmt.seconds(total))}</td>',
                f'<td class="n">{esc(fmt.pct(total, t.compile_s))}</td>']
        tds += [f'<td class="n">{esc(fmt.seconds(wasted)) if wasted > 0 else ""}</td>'] if waste else []
        return f'<tr{f" class={cls}" if cls else ""}>{"".join(tds)}</tr>'

    body = []
    for r in t.rows:
        body.append(row(md.cause_label(r.cause, r.folded), r.cells, r.total, r.wasted))
        body += [row("↳ " + d.label, None, d.seconds, 0.0, "dp-sub") for d in r.details]
        if r.more_details[0]:
            body.append(row(f"↳ +{r.more_details[0]:,} more", None, r.more_details[1], 0.0, "dp-sub"))
    body.append(row("all causes", t.totals.cells, t.totals.total, t.totals.wasted, "dp-total"))
    notes = "".join(f'<p class="dp-note">{esc(n)}</p>' for n in md.cause_table_notes(t))
    table_html = (f'<div class="dp-x"><table class="dp-table dp-causes"><thead><tr>{head}</tr></thead>'
                  f'<tbody>{"".join(body)}</tbody></table></div>')
    return section("causes", "By cause and phase", table_html + notes)


#: the order the report shows the flamegraphs in: the user's code first
_VIEW_ORDER = {"traced": 0, "compiler": 1, "inline": 2}


def _flamegraphs(ctx: RenderContext) -> str:
    try:
        from dynaprof.render.flamegraph import (
            VIEW_DESCRIPTIONS,
            available_views,
            frame_file_names,
            run_flamegraph,
        )
    except ImportError:  # pragma: no cover - the flamegraph renderer ships with dynaprof
        return section("flamegraphs", "Flamegraphs", '<p class="dp-note">Flamegraph renderer not available.</p>')
    parts = []
    for view in sorted(available_views(ctx.session), key=lambda v: _VIEW_ORDER.get(v, 9)):
        svg = run_flamegraph(ctx, view)
        label = esc(VIEW_DESCRIPTIONS.get(view, view))
        # the user-code view is drawn whole; the deeper ones sit in a fixed-height box
        box = "" if view == "traced" else " dp-box"
        parts.append(f'<div class="dp-graph dp-flame{box}" data-view="{esc(view)}" aria-label="{label}">'
                     f"{inline_svg(svg)}</div>")
    hint = ('<p class="dp-note">User-code view first: every sampled second on the user code it was spent for, '
            "coloured by compiler phase. Then the compiler view (Dynamo's interpreter folded into the user functions "
            "it traces; colours: each frame's own attribution category, pale where a frame only passes time on), "
            'in a box that scrolls. Click a frame to zoom, "Reset zoom" or Esc to go back; "Search" (or Ctrl-F with '
            "the pointer over a graph) highlights matching functions.</p>")
    return section("flamegraphs", "Flamegraphs", hint + "".join(parts) + _frame_flame_links(ctx, frame_file_names))


def _frame_flame_links(ctx: RenderContext, frame_file_names: Callable[[Session, int | None], dict[str, str]]) -> str:
    """Links to the per-compile flamegraphs this render wrote (``flames/<stem>-<view>.svg``)."""
    s = ctx.session
    names: dict[str, str] = frame_file_names(s, ctx.options.max_frame_graphs)
    items = []
    for key, stem in names.items():
        links = []
        for view, label in (("traced", "user code"), ("compiler", "compiler")):
            rel = f"flames/{stem}-{view}.svg"
            if ctx.made is None or rel in ctx.made:
                links.append(f'<a href="{esc(rel)}">{esc(label)}</a>')
        f = s.frame(key)
        if not links or f is None:
            continue
        name, filename, lineno = display_name(f)
        items.append(f'<li><span class="dp-id">{esc(md.frame_id(f))}</span> {esc(fmt.one_line(name, 120))} '
                     f'<span class="dp-loc">{esc(fmt.location(filename, lineno))}</span>: {" · ".join(links)}</li>')
    if not items:
        return ""
    return (f'<h3>Per compile ({len(items):,})</h3><p class="dp-note">Each compile\'s flamegraphs, as separate '
            f'files next to this report.</p><ul class="dp-flame-links">{"".join(items)}</ul>')


def _load_renderer(module: str, func: str) -> Renderer | None:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            return None
        raise
    return cast(Renderer, getattr(mod, func, None))


def _callgraph(ctx: RenderContext) -> str:
    made = ctx.memo.get("callgraph")  # what the call graph renderer made (maybe in another process)
    s = ctx.session
    if made is None and s.samples is None and not ctx.cprofile:
        # nothing to draw: skip the call graph renderer and its imports (networkx)
        return section("callgraph", "Call graph",
                       '<p class="dp-note">no call graph: this session has no samples or cProfile data.</p>')
    render = None if made is not None else _load_renderer("dynaprof.render.callgraph", "render_callgraph")
    files = dict(made) if made is not None else render(ctx) if render is not None else {}
    svg = files.get(CALLGRAPH_SVG)
    if isinstance(svg, Deferred):
        svg = svg.result()
    if isinstance(svg, bytes):
        svg = svg.decode("utf-8", "replace")
    if not svg:
        why = "call graph renderer not available" if render is None else "no call graph (Graphviz `dot` not run)"
        return section("callgraph", "Call graph", f'<p class="dp-note">{esc(why)}.</p>')
    tools = ('<span class="dp-tools dp-pz-tools"><button type="button" data-pz="in">Zoom in</button>'
             '<button type="button" data-pz="out">Zoom out</button><button type="button" data-pz="fit">Fit</button>'
             "</span>")
    return section("callgraph", "Call graph",
                   '<div class="dp-bar"><p class="dp-note">The heaviest compiler functions by sampled time (fill: '
                   "inclusive time, light to dark grey; outline: attribution category, the flamegraph's colours; "
                   "the legend in the graph explains them). Drag or scroll to pan, Ctrl + scroll (or the buttons, "
                   f"or +/-/0 with the pointer over it) to zoom.</p>{tools}</div>"
                   f'<div class="dp-graph dp-callgraph">{inline_svg(svg)}</div>')


def _frames_table(s: Session) -> str:
    ordered = md.frames_by_time(s)
    cols = [Col("compile id", code=True, nowrap=True), Col("function"), Col("location", code=True, nowrap=True),
            Col("status"), Col("time", True), Col("restarts", True), Col("graph breaks", True), Col("guards", True),
            Col("inlined calls", True), Col("graph ops", True)]
    rows = [[(md.frame_id(f), float(i)), fmt.one_line(display_name(f)[0], 200),
             fmt.location(display_name(f)[1], display_name(f)[2]), f.status,
             secs(f.compile_time_s), num(f.restarts), num(f.graph_breaks), num(f.guard_count),
             num(f.inlined_calls), num(f.graph_op_count)] for i, f in enumerate(ordered[:MAX_TABLE_ROWS])]
    return section("frames", f"Compiled frames ({len(ordered):,})",
                   '<p class="dp-note">Slowest first; click a column header to sort.</p>'
                   + table(cols, rows, total=len(ordered), noun="frames"))


def _properties(s: Session) -> str:
    props = md.parametrized_properties(s)
    if not props:
        return ""
    rows = [[p.label, num(p.count), num(p.instances), secs(p.seconds)] for p in props[:MAX_TABLE_ROWS]]
    cols = [Col("property", code=True), Col("times traced", True), Col("instances", True), Col("seconds", True)]
    return section("properties", "Parametrized properties",
                   '<p class="dp-note">Exact time Dynamo spent tracing the @property that nn.utils.parametrize '
                   "injects (outermost only).</p>" + table(cols, rows, total=len(props), noun="properties"))


def _traced(s: Session, derived: Derived) -> str:
    times = md.traced_function_times(s, derived)
    if not times:
        return ""
    rows = [[t.func.name + (" (property)" if t.func.kind == "property" else ""),
             fmt.location(t.func.filename, t.func.lineno), secs(t.self_s), secs(t.inclusive_s)]
            for t in times[:200]]
    cols = [Col("traced user function", code=True), Col("location", code=True, nowrap=True), Col("self", True),
            Col("inclusive", True)]
    return section("traced", "Traced user functions (sampled)", table(cols, rows, total=len(times), noun="functions"))


def _reasons(s: Session) -> str:
    out = []
    rr = md.restart_reasons(s)
    if rr:
        rows = [[r, num(n), ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")] for r, n, ids in rr[:500]]
        out.append("<h3>Restart reasons</h3>" + table([Col("reason", code=True), Col("times", True), Col("frames")],
                                                       rows, total=len(rr), noun="reasons"))
    gb = md.graph_break_reasons(s)
    if gb:
        rows = [[r, loc, num(n)] for r, loc, n in gb[:500]]
        out.append("<h3>Graph break reasons</h3>" + table(
            [Col("reason", code=True), Col("user location", code=True, nowrap=True), Col("count", True)], rows,
            total=len(gb), noun="reasons"))
    return section("reasons", "Restarts and graph breaks", "".join(out)) if out else ""


def _environment(s: Session) -> str:
    r, c = s.run, s.capture
    facts = [("target", r.target), ("torch", r.torch_version or "?"), ("python", r.python_version),
             ("device", r.device or "?"), ("platform", r.platform), ("host", r.hostname), ("cwd", r.cwd),
             ("sampler", md.sampler_text(s)), ("hooks", ", ".join(c.hooks) or "none"),
             ("dynaprof", r.dynaprof_version), ("started", r.start_time),
             ("exit", fmt.exit_fact(r.end_reason, r.exit_status))]
    facts += [("warning", w) for w in c.warnings]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    cmd = shlex.join(r.command) or "?"
    return section("environment", "Environment and reproduction",
                   f'<dl class="dp-facts">{dl}</dl><h3>Reproduce</h3><pre class="dp-pre">{esc(cmd)}</pre>')


def _pill(text: str, kind: str = "") -> str:
    return f'<span class="dp-pill{" " + kind if kind else ""}">{esc(text)}</span>'


def _facts(items: Iterable[tuple[str, object]]) -> str:
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items if v is not None and v != "")
    return f'<dl class="dp-facts">{dl}</dl>' if dl else ""


def _frame(s: Session, f: CompiledFrame) -> str:
    pills = [_pill(f.status, "bad")] if f.status != "ok" else []
    if f.restarts:
        pills.append(_pill(f"{f.restarts} restart{'s' * (f.restarts != 1)}", "warn"))
    if f.graph_breaks:
        pills.append(_pill(f"{f.graph_breaks} graph break{'s' * (f.graph_breaks != 1)}", "warn"))
    if f.recompile_reason:
        pills.append(_pill("recompile", "warn"))
    pills.append(_pill(f"{fmt.count(f.guard_count)} guards"))
    head = (f'<summary><span class="dp-id">{esc(md.frame_id(f))}</span><span>{esc(fmt.one_line(f.name, 120))}</span>'
            f'<span class="dp-loc">{esc(fmt.location(f.filename, f.lineno))}</span>{"".join(pills)}'
            f'<span class="dp-time">{esc(md.frame_time(f))}</span></summary>')
    g = f.guards
    parts = [_facts([
        ("file", f"{f.filename}:{f.lineno}"), ("thread", f"{f.thread_name} ({f.thread})"),
        ("started", f"{f.start_s:.3f} s into the run"), ("compile time", fmt.seconds(f.compile_time_s)),
        ("generation", f.generation or None), ("recompile reason", f.recompile_reason),
        ("failure", f"{f.fail_type or ''} {f.fail_reason or ''}".strip() or None),
        ("guards", f"{fmt.count(f.guard_count)} guards; C++ tree {fmt.count(g.tree_leaf_count)} leaves, depth "
                   f"{fmt.count(g.tree_depth)}; guard code {fmt.count(g.code_text_chars)} chars"
                   + (f"; check latency {g.latency_us:.1f} us" if g.latency_us is not None else "")),
        ("graph", None if f.graph_op_count is None and f.graph_node_count is None else
                  f"{fmt.count(f.graph_op_count)} ops, {fmt.count(f.graph_node_count)} nodes, "
                  f"{fmt.count(f.graph_input_count)} inputs"),
        ("traced", f"{fmt.count(f.ir_count)} bytecode instructions, {fmt.count(f.inlined_calls)} inlined calls"),
        ("cProfile", f.cprofile),
    ])]
    def sub(title: str, cols: list[Col], rows: list[list[object]], total: int | None = None, noun: str = "") -> None:
        parts.append(f"<h3>{esc(title)}</h3>" + table(cols, rows, compact=True, total=total, noun=noun))

    if f.phases:
        phases = sorted(f.phases.items(), key=lambda kv: -kv[1])
        sub("Phases (inclusive)", [Col("phase", code=True), Col("seconds", True), Col("% of frame", True)],
            [[k, secs(v), (fmt.pct(v, f.compile_time_s), v)] for k, v in phases])
    cats = [(k, v) for k, v in sorted(f.attribution.items(), key=lambda kv: -kv[1]) if v > 0]
    if cats:
        sub("Attribution (sampled)", [Col("category"), Col("seconds", True)],
            [[CATEGORY_LABELS.get(k, k), secs(v)] for k, v in cats])
    if f.restarts:
        sub("Attempts", [Col("attempt"), Col("start (s)", True), Col("duration", True), Col("outcome")],
            [[str(a.index), secs(a.start_s), secs(a.duration_s), ("final" if a.index >= f.restarts else "discarded")
              + (" (sampled seconds: torch did not time attempts)" if a.source == "sampled" else "")]
             for a in sorted(f.attempts, key=lambda a: a.index)])
        parts.extend(f'<pre class="dp-pre">{esc(md.restart_detail_text(r))}</pre>' for r in f.restart_details[:20])
    if f.graph_break_reasons:
        sub("Graph breaks", [Col("reason", code=True), Col("location", code=True, nowrap=True)],
            [[fmt.one_line(b.reason, 400), fmt.location(b.filename, b.lineno) if b.filename else ""]
             for b in f.graph_break_reasons[:100]], len(f.graph_break_reasons), "graph breaks")
    if g.sources:
        sub("Guard lines by user source", [Col("source", code=True), Col("lines", True)],
            [[k, num(v)] for k, v in sorted(g.sources.items(), key=lambda kv: (-kv[1], kv[0]))[:25]],
            len(g.sources), "sources")
    if f.properties:
        sub("Traced properties", [Col("property", code=True), Col("parametrized"), Col("times", True),
                                  Col("instances", True), Col("seconds", True)],
            [[p.label, "yes" if p.parametrized else "no", num(p.count), num(p.instances), secs(p.seconds)]
             for p in sorted(f.properties, key=lambda p: -p.seconds)[:100]], len(f.properties), "properties")
    if f.call_site:
        lines = "\n".join(f"{fmt.location(c.filename, c.lineno)} in {c.name}" for c in f.call_site)
        parts.append(f'<h3>Call site</h3><pre class="dp-pre">{esc(lines)}</pre>')
    return f'<details class="dp-frame">{head}<div class="body">{"".join(parts)}</div></details>'


def frame_sections(s: Session, limit: int = 200) -> str:
    if not s.frames:
        return ""
    ordered = md.frames_by_time(s)
    tools = ('<div class="dp-bar"><p class="dp-note">Slowest first; click one to open it.</p><span class="dp-tools">'
             '<button type="button" data-expand="open" data-target="compiles">Expand all</button>'
             '<button type="button" data-expand="close" data-target="compiles">Collapse all</button></span></div>')
    more = (f'<p class="dp-note">... and {len(ordered) - limit:,} faster compiles not shown</p>'
            if len(ordered) > limit else "")
    body = tools + "".join(
        _frame(s, f) for f in ordered[:limit]) + more
    return section("compiles", "Per compile", body)


def _notes(ctx: RenderContext) -> str:
    if not ctx.notes:
        return ""
    return section("notes", "Notes", "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in ctx.notes) + "</ul>")


def report_html(ctx: RenderContext) -> str:
    s = ctx.session
    sections = [_summary(s), _causes(s), _attribution(s), _flamegraphs(ctx), _callgraph(ctx), _frames_table(s),
                _properties(s), _traced(s, ctx.derived), frame_sections(s), _reasons(s), _environment(s)]
    sections.append(_notes(ctx))  # last: earlier sections may have added notes
    body = "\n".join(x for x in sections if x)
    nav = [(a, label) for a, label in (
        ("summary", "Summary"), ("causes", "Causes"), ("attribution", "Attribution"), ("flamegraphs", "Flamegraphs"),
        ("callgraph", "Call graph"), ("frames", "Frames"), ("properties", "Properties"),
        ("traced", "Traced functions"), ("compiles", "Per compile"), ("reasons", "Restarts & breaks"),
        ("environment", "Environment"), ("notes", "Notes")) if f'id="{a}"' in body]
    data = {"target": s.run.target, "verdict": hottest(s), "totals": totals(s),
            "findings": [{"key": f.key, "seconds": f.seconds, "text": f.text} for f in findings(s)]}
    return page(f"dynaprof: {fmt.one_line(s.run.target, 120)}", _header(s), nav, body, data)


def render_html(ctx: RenderContext) -> Files:
    return {REPORT_HTML: report_html(ctx)}
