"""``report.html``: the run's page (``templates/report.html.j2``), built with the page toolkit
(``render.html_toolkit``).

The page leads with the verdict and totals, then findings, the cause x phase table, the flamegraphs
(their SVG inlined: each carries its own zoom/search script, written to work inlined, several
per page), the call graph, sortable tables and one collapsible section per compile. What it says
is ``render.report_facts``'s, as the Markdown summary's is; this module makes the page's
view-model of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from markupsafe import Markup

from dynaprof import fmt
from dynaprof.analysis import how_made
from dynaprof.analysis.cause_table import cause_rows, session_cause_table
from dynaprof.analysis.derived import Derived
from dynaprof.analysis.findings import findings, hottest, totals
from dynaprof.analysis.repeats import repeat_summary
from dynaprof.model.session import CATEGORY_LABELS, CompiledFrame, Session, display_name
from dynaprof.render import cache_section
from dynaprof.render.base import Deferred, Files, RenderContext, page_rows
from dynaprof.render.cache_section import CacheSection
from dynaprof.render.html_toolkit import (
    Col,
    Kpi,
    Link,
    Page,
    Table,
    inline_svg,
    nav,
    num,
    render_page,
    secs,
    table,
)
from dynaprof.render.output_names import CALLGRAPH_SVG, REPORT_HTML
from dynaprof.render.report_facts import (
    HTML,
    cause_cell,
    cause_label,
    cause_table_notes,
    frame_facts,
    frame_id,
    frame_time,
    frames_by_time,
    graph_break_reasons,
    parametrized_properties,
    restart_detail_text,
    restart_reasons,
    sampler_text,
    sampling_note,
    traced_function_times,
)

__all__ = ["render_html", "report_html", "report_view"]


@dataclass(frozen=True)
class CauseRow:
    label: str
    cells: list[str]  # one per phase column, "" for nothing
    total: str
    pct: str
    wasted: str
    cls: str = ""  # "dp-sub" (a detail line), "dp-total"
    group: str = ""  # a roll-up row's id on the row (``opens``) and on its members (``of``)
    opens: bool = False


@dataclass(frozen=True)
class Causes:
    columns: list[tuple[str, str]]  # (label, description)
    waste: bool  # the restart waste column is shown
    rows: list[CauseRow]
    notes: list[str]


class Flame(NamedTuple):
    view: str
    label: str
    box: bool  # in a fixed-height box
    svg: Markup


class FrameLinks(NamedTuple):
    id: str
    name: str
    loc: str
    links: list[Link]


@dataclass(frozen=True)
class Flamegraphs:
    graphs: list[Flame] = field(default_factory=list)
    frames: list[FrameLinks] = field(default_factory=list)  # links to the per-compile flamegraphs
    frames_title: str = ""


@dataclass(frozen=True)
class CallGraph:
    note: str = ""  # why there is no graph
    svg: Markup | None = None


class Pill(NamedTuple):
    text: str
    kind: str = ""  # "bad", "warn"


class Block(NamedTuple):
    """One part of a compile's body: a fact list, a titled table or a preformatted text."""

    kind: Literal["facts", "table", "pre"]
    title: str = ""
    facts: tuple[tuple[str, str], ...] = ()
    table: Table | None = None
    text: str = ""


@dataclass(frozen=True)
class FrameView:
    id: str
    name: str
    loc: str
    pills: list[Pill]
    time: str
    blocks: list[Block]


@dataclass(frozen=True)
class Compiles:
    frames: list[FrameView]
    more: str = ""  # how many faster compiles are not shown


@dataclass(frozen=True)
class Report:
    page: Page
    verdict: str
    kpis: list[Kpi]
    also: list[str]
    causes: Causes | None
    flamegraphs: Flamegraphs
    callgraph: CallGraph
    frames_title: str
    frames: Table
    properties: Table | None
    traced: Table | None
    compiles: Compiles | None
    reasons: list[tuple[str, Table]]
    environment: list[tuple[str, str]]
    command: str
    notes: list[str]
    cache: CacheSection | None = None  # templates/cache_section.html.j2


def _meta(s: Session) -> str:
    r = s.run
    return " · ".join(x for x in (
        f"started {r.start_time}", f"torch {r.torch_version or '?'}", f"Python {r.python_version}",
        f"device {r.device or '?'}", r.platform, "complete" if r.complete else f"incomplete ({r.end_reason})",
    ) if x)


def _kpis(s: Session) -> list[Kpi]:
    t = totals(s)
    sampled = s.samples
    return [
        Kpi("compile time", fmt.seconds(s.total_compile_s),
            f"of {fmt.seconds(s.run.wall_s)} run" if s.run.wall_s is not None else ""),
        Kpi("compiled frames", f"{int(t['frames'] or 0):,}",
            f"{int(t['failed'] or 0):,} failed" if t["failed"] else ""),
        Kpi("restarts", fmt.count(_i(t["restarts"]))),
        Kpi("graph breaks", fmt.count(_i(t["graph_breaks"]))),
        Kpi("guards", fmt.count(_i(t["guards"])), "all frames"),
        Kpi("samples", f"{sampled.count:,}" if sampled else "none",
            f"{sampled.achieved_hz:,.0f} Hz" if sampled and sampled.achieved_hz else ""),
    ]


def _i(v: float | int | None) -> int | None:
    return None if v is None else int(v)


#: a roll-up row's members listed under it in the report
MEMBERS_SHOWN = 20


def _causes(s: Session, max_rows: int) -> Causes | None:
    """The cause x phase table (``analysis.cause_table``, ``cause_rows``: the rows every output
    shows); nothing for sessions without it."""
    t = session_cause_table(s, cause_rows(max_rows))
    if t is None:
        return None
    waste = t.restart_waste > 0

    def row(label: str, cells: dict[str, float] | None, total: float, wasted: float, cls: str = "",
            group: str = "", opens: bool = False) -> CauseRow:
        return CauseRow(label, [cause_cell((cells or {}).get(c.key, 0.0)) for c in t.columns],
                        fmt.seconds(total), fmt.pct(total, t.compile_s), fmt.seconds(wasted) if wasted > 0 else "",
                        cls, group, opens)

    rows = []
    for i, r in enumerate(t.rows):
        group = f"dp-rollup-{i}" if r.members else ""
        rows.append(row(cause_label(r.cause, r.merged), r.cells, r.total, r.wasted, "", group, bool(group)))
        rows += [row("↳ " + d.label, None, d.seconds, 0.0, "dp-sub") for d in r.details]
        if r.more_details[0]:
            rows.append(row(f"↳ +{r.more_details[0]:,} more", None, r.more_details[1], 0.0, "dp-sub"))
        # a roll-up row's members, which the reader opens under it (report.js closes them on load)
        rows += [row("↳ " + m.label, None, m.seconds, 0.0, "dp-sub", group) for m in r.members[:MEMBERS_SHOWN]]
        if len(r.members) > MEMBERS_SHOWN:
            hidden = r.members[MEMBERS_SHOWN:]
            rows.append(row(f"↳ +{len(hidden):,} more", None, sum(m.seconds for m in hidden), 0.0, "dp-sub", group))
    rows.append(row("all causes", t.totals.cells, t.totals.total, t.totals.wasted, "dp-total"))
    notes = cause_table_notes(t) + [n for n in (sampling_note(s),) if n]
    return Causes([(c.label, c.description) for c in t.columns], waste, rows, notes)


#: the order the report shows the flamegraphs in: the user's code first
_VIEW_ORDER = {"traced": 0, "compiler": 1, "inline": 2}


def _flamegraphs(ctx: RenderContext) -> Flamegraphs:
    from dynaprof.render.flamegraph import VIEW_DESCRIPTIONS, available_views, frame_file_names, run_flamegraph

    graphs = [Flame(view, VIEW_DESCRIPTIONS.get(view, view), view != "traced", inline_svg(run_flamegraph(ctx, view)))
              # the user-code view is drawn whole; the deeper ones sit in a fixed-height box
              for view in sorted(available_views(ctx.session), key=lambda v: _VIEW_ORDER.get(v, 9))]
    links = _frame_flame_links(ctx, frame_file_names)
    return Flamegraphs(graphs, links, f"Per compile ({len(links):,})")


def _frame_flame_links(ctx: RenderContext,
                       frame_file_names: Callable[..., dict[str, str]]) -> list[FrameLinks]:
    """Links to the per-compile flamegraphs this render wrote (``flames/<stem>-<view>.svg``)."""
    s = ctx.session
    names: dict[str, str] = frame_file_names(s, ctx.options.max_frame_graphs, derived=ctx.derived)
    items = []
    for key, stem in names.items():
        links = []
        for view, label in (("traced", "user code"), ("compiler", "compiler")):
            rel = f"flames/{stem}-{view}.svg"
            if ctx.made is None or rel in ctx.made:
                links.append(Link(rel, label))
        f = s.frame(key)
        if not links or f is None:
            continue
        name, filename, lineno = display_name(f)
        items.append(FrameLinks(frame_id(f), fmt.one_line(name, 120), fmt.location(filename, lineno), links))
    return items


def _callgraph(ctx: RenderContext) -> CallGraph:
    made = ctx.memo.get("callgraph")  # what the call graph renderer made (maybe in another process)
    s = ctx.session
    if made is None and s.samples is None and not ctx.cprofile:
        # nothing to draw: skip the call graph renderer and its imports (networkx)
        return CallGraph("no call graph: this session has no samples or cProfile data.")
    if made is None:
        from dynaprof.render.callgraph import render_callgraph  # here: networkx only when drawn

        made = render_callgraph(ctx)
    files = dict(made)
    svg = files.get(CALLGRAPH_SVG)
    if isinstance(svg, Deferred):
        svg = svg.result()
    if isinstance(svg, bytes):
        svg = svg.decode("utf-8", "replace")
    if not svg:
        return CallGraph("no call graph (Graphviz `dot` not run).")
    return CallGraph(svg=inline_svg(svg))


def _frames_table(ordered: list[CompiledFrame], max_rows: int) -> Table:
    facts = frame_facts(HTML, ordered)  # the --time-calls columns where any frame has them
    cols = [Col("compile id", code=True, nowrap=True), Col("function"), Col("location", code=True, nowrap=True),
            Col("status"), Col("time", True), *(Col(c.header, True) for c in facts)]
    rows = []
    for i, f in enumerate(ordered[:page_rows(max_rows)]):
        name, filename, lineno = display_name(f)
        rows.append([(frame_id(f), float(i)), fmt.one_line(name, 200), fmt.location(filename, lineno), f.status,
                     secs(f.compile_time_s), *(c.cell(f) for c in facts)])
    return table(cols, rows, total=len(ordered), noun="frames")


def _properties(s: Session, max_rows: int) -> Table | None:
    props = parametrized_properties(s)
    if not props:
        return None
    rows = [[p.label, num(p.count), num(p.instances), secs(p.seconds)] for p in props[:page_rows(max_rows)]]
    cols = [Col("property", code=True), Col("times traced", True), Col("instances", True), Col("seconds", True)]
    return table(cols, rows, total=len(props), noun="properties")


#: the traced functions and the per-compile sections list a tenth of ``page_rows``, the reasons a
#: quarter (200, 200 and 500 rows by default)
TRACED_SHARE, COMPILES_SHARE, REASONS_SHARE = 10, 10, 4


def _traced(s: Session, derived: Derived, max_rows: int) -> Table | None:
    times = traced_function_times(s, derived)
    if not times:
        return None
    rows = [[t.func.name + (" (property)" if t.func.kind == "property" else ""),
             fmt.location(t.func.filename, t.func.lineno), secs(t.self_s), secs(t.inclusive_s)]
            for t in times[:page_rows(max_rows) // TRACED_SHARE]]
    cols = [Col("traced user function", code=True), Col("location", code=True, nowrap=True), Col("self", True),
            Col("inclusive", True)]
    return table(cols, rows, total=len(times), noun="functions")


def _reasons(s: Session, max_rows: int) -> list[tuple[str, Table]]:
    out, limit = [], page_rows(max_rows) // REASONS_SHARE
    rr = restart_reasons(s)
    if rr:
        rows = [[r, num(n), ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")] for r, n, ids in rr[:limit]]
        out.append(("Restart reasons", table([Col("reason", code=True), Col("times", True), Col("frames")], rows,
                                             total=len(rr), noun="reasons")))
    gb = graph_break_reasons(s)
    if gb:
        gb_rows = [[r, loc, num(n)] for r, loc, n in gb[:limit]]
        out.append(("Graph break reasons", table(
            [Col("reason", code=True), Col("user location", code=True, nowrap=True), Col("count", True)], gb_rows,
            total=len(gb), noun="reasons")))
    return out


def _environment(s: Session) -> list[tuple[str, str]]:
    r, c = s.run, s.capture
    facts = [*how_made.provenance_facts(s)[1:], *([("repeats", reps)] if (reps := repeat_summary(s)) else []),
             ("device", r.device or "?"), ("host", r.hostname), ("cwd", r.cwd),
             ("sampler", sampler_text(s)), ("hooks", ", ".join(c.hooks) or "none"), ("started", r.start_time),
             ("exit", fmt.exit_fact(r.end_reason, r.exit_status))]
    return [(k, str(v)) for k, v in facts]


def _facts(items: Iterable[tuple[str, object]]) -> list[tuple[str, str]]:
    return [(k, str(v)) for k, v in items if v is not None and v != ""]


#: a compile's section lists a twentieth of ``page_rows`` of its graph breaks and properties (100 by
#: default), a hundredth of its restart reasons (20) and ``max_rows`` guard sources (25)
DETAIL_SHARE, RESTART_DETAIL_SHARE = 20, 100


def _frame(f: CompiledFrame, max_rows: int) -> FrameView:
    detail = page_rows(max_rows) // DETAIL_SHARE
    pills = [Pill(f.status, "bad")] if f.status != "ok" else []
    if f.restarts:
        pills.append(Pill(f"{fmt.plural(f.restarts, 'restart')}", "warn"))
    if f.graph_breaks:
        pills.append(Pill(f"{fmt.plural(f.graph_breaks, 'graph break')}", "warn"))
    if f.recompile_reason:
        pills.append(Pill("recompile", "warn"))
    pills.append(Pill(f"{fmt.count(f.guard_count)} guards"))
    g = f.guards
    facts = _facts([
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
    ])
    blocks = [Block("facts", facts=tuple(facts))] if facts else []

    def sub(title: str, cols: list[Col], rows: Iterable[Sequence[object]], total: int | None = None,
            noun: str = "") -> None:
        blocks.append(Block("table", title, table=table(cols, rows, compact=True, total=total, noun=noun)))

    if f.phases:
        phases = sorted(f.phases.items(), key=lambda kv: -kv[1])
        sub("Phases (inclusive)", [Col("phase", code=True), Col("seconds", True), Col("% of frame", True)],
            [[k, secs(v), (fmt.pct(v, f.compile_time_s), v)] for k, v in phases])
    groups = [(k, v) for k, v in f.attribution.items() if v > 0]  # pipeline order, as the table's columns
    if groups:
        sub("Sampled, by phase", [Col("phase"), Col("seconds", True)],
            [[CATEGORY_LABELS.get(k, k), secs(v)] for k, v in groups])
    if f.restarts:
        sub("Attempts", [Col("attempt"), Col("start (s)", True), Col("duration", True), Col("outcome")],
            [[str(a.index), secs(a.start_s), secs(a.duration_s), ("final" if a.index >= f.restarts else "discarded")
              + (" (sampled seconds: torch did not time attempts)" if a.source == "sampled" else "")]
             for a in sorted(f.attempts, key=lambda a: a.index)])
        reasons = f.restart_details[:page_rows(max_rows) // RESTART_DETAIL_SHARE]
        blocks.extend(Block("pre", text=restart_detail_text(r)) for r in reasons)
    if f.graph_break_reasons:
        sub("Graph breaks", [Col("reason", code=True), Col("location", code=True, nowrap=True)],
            [[fmt.one_line(b.reason, 400), fmt.location(b.filename, b.lineno) if b.filename else ""]
             for b in f.graph_break_reasons[:detail]], len(f.graph_break_reasons), "graph breaks")
    if g.sources:
        sub("Guard lines by user source", [Col("source", code=True), Col("lines", True)],
            [[k, num(v)] for k, v in sorted(g.sources.items(), key=lambda kv: (-kv[1], kv[0]))[:max_rows]],
            len(g.sources), "sources")
    if f.properties:
        sub("Traced properties", [Col("property", code=True), Col("parametrized"), Col("times", True),
                                  Col("instances", True), Col("seconds", True)],
            [[p.label, "yes" if p.parametrized else "no", num(p.count), num(p.instances), secs(p.seconds)]
             for p in sorted(f.properties, key=lambda p: -p.seconds)[:detail]], len(f.properties), "properties")
    if f.call_site:
        lines = "\n".join(f"{fmt.location(c.filename, c.lineno)} in {c.name}" for c in f.call_site)
        blocks.append(Block("pre", "Call site", text=lines))
    name, filename, lineno = display_name(f)
    return FrameView(frame_id(f), name, fmt.location(filename, lineno), pills,
                     frame_time(f), blocks)


def _compiles(ordered: list[CompiledFrame], max_rows: int) -> Compiles | None:
    limit = page_rows(max_rows) // COMPILES_SHARE
    if not ordered:
        return None
    more = f"{len(ordered) - limit:,}" if len(ordered) > limit else ""
    return Compiles([_frame(f, max_rows) for f in ordered[:limit]], more)


#: the report's sections in page order, with their navigation labels
REPORT_NAV = (("summary", "Summary"), ("causes", "Causes"),
              ("flamegraphs", "Flamegraphs"), ("callgraph", "Call graph"), ("frames", "Frames"),
              ("properties", "Properties"), ("traced", "Traced functions"), ("compiles", "Per compile"),
              ("reasons", "Restarts & breaks"), ("cache", "Cache"), ("environment", "How it was made"),
              ("notes", "Notes"))


def report_view(ctx: RenderContext) -> Report:
    """What ``report.html`` shows, as text ready to print."""
    s = ctx.session
    ordered = frames_by_time(s)
    rows = ctx.options.max_rows
    causes = _causes(s, rows)
    flames, callgraph = _flamegraphs(ctx), _callgraph(ctx)
    frames = _frames_table(ordered, rows)
    properties, traced = _properties(s, rows), _traced(s, ctx.derived, rows)
    compiles, reasons = _compiles(ordered, rows), _reasons(s, rows)
    cache_view = cache_section.view(s)
    # the run's notes (the terminal shows only those that change how its numbers read), then the
    # renderers' own; last: the sections above may have added notes
    notes = list(s.capture.warnings) + list(ctx.notes)
    present = [a for a, shown in (
        ("summary", True), ("causes", True), ("flamegraphs", True), ("callgraph", True),
        ("frames", True), ("properties", properties), ("traced", traced), ("compiles", compiles),
        ("reasons", reasons), ("cache", cache_view), ("environment", True), ("notes", notes)) if shown]
    found = findings(s)
    verdict = hottest(s, found)
    data = {"target": s.run.target, "verdict": verdict, "totals": totals(s),
            "findings": [{"key": f.key, "seconds": f.seconds, "text": f.text} for f in found]}
    target = how_made.script_path(s.run)
    page = Page(f"dynaprof: {fmt.one_line(target, 120)}", "dynaprof · torch.compile compile-time report",
                fmt.one_line(target, 300), _meta(s), nav(present, REPORT_NAV), data)
    return Report(
        page=page, verdict=verdict, kpis=_kpis(s), also=[f.text for f in found[1:]],
        causes=causes, flamegraphs=flames, callgraph=callgraph,
        frames_title=f"Compiled frames ({len(ordered):,})", frames=frames, properties=properties, traced=traced,
        compiles=compiles, reasons=reasons, environment=_environment(s), command=how_made.repro_line(s),
        notes=notes, cache=cache_view)


def report_html(ctx: RenderContext) -> str:
    r = report_view(ctx)
    return render_page("report.html.j2", r.page, r)


def render_html(ctx: RenderContext) -> Files:
    return {REPORT_HTML: report_html(ctx)}
