"""A sweep's outputs beside its point folders: ``summary.md``, ``report.html`` (the growth chart
inline) and ``growth.svg``; the terminal lines ``dynaprof sweep`` prints; and the Markdown of two
sweeps compared (``compare.md``, the PR comment). Every renderer returns text; user text (causes,
the parameter's name and values, the target, errors) is escaped for each format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dynaprof import fmt
from dynaprof.analysis.growth import Fit, Growth, Projection, projection_warning, projections, verdict, x_text
from dynaprof.analysis.growth_gate import ExponentChange
from dynaprof.model.sweep import Sweep
from dynaprof.render import html_toolkit as h
from dynaprof.render.base import Files
from dynaprof.render.growth_chart import growth_svg
from dynaprof.render.markdown import md_escape, md_table

SUMMARY_MD = "summary.md"
REPORT_HTML = "report.html"
GROWTH_SVG = "growth.svg"
#: the most timing rows a table lists (the largest at the largest point first)
MAX_ROWS = 20


def _pct(v: float | None) -> str:
    return "absent" if v is None else f"{v:.0%}"


def _k(f: Fit) -> str:
    return "?" if f.exponent is None else f"{f.exponent:.2f}"


def _interval(f: Fit) -> str:
    if f.exponent is None:
        return f.note
    if not f.has_interval:
        return "none: one run per point"
    return "exact" if not f.boot else f"{f.low:.2f} to {f.high:.2f}"


def header_line(sweep: Sweep) -> str:
    """``LAYERS = 4, 8, 16, 32; 3 repeats a point, cold compiler caches; torch 2.13.0``"""
    params = "; ".join(f"{p.name} = {', '.join(p.values)}" for p in sweep.params)
    caches = "cold compiler caches" if sweep.cold else "warm compiler caches"
    torch = f"; torch {sweep.torch_version}" if sweep.torch_version else ""
    stopped = "; interrupted: the points that finished" if sweep.interrupted else ""
    return f"{params}; {fmt.plural(sweep.repeat, 'repeat')} a point, {caches}{torch}{stopped}"


def _timing_rows(g: Growth) -> list[list[str]]:
    lo, hi = (g.xs[0], g.xs[-1]) if g.xs else (0.0, 0.0)
    rows = []
    for f in [x for x in g.fits if x.kind == "time"][:MAX_ROWS]:
        rows.append([f.label, _k(f), _interval(f), f.residual_text(), _pct(g.share(f, lo)), _pct(g.share(f, hi)),
                     f.absence_text(g.axis)])
    return rows


def _count_rows(g: Growth) -> list[list[str]]:
    lo, hi = (g.xs[0], g.xs[-1]) if g.xs else (0.0, 0.0)
    out = []
    for f in g.counts():
        at_lo, at_hi = f.median_at(lo), f.median_at(hi)
        out.append([f.label, _k(f), _interval(f), fmt.count(None if at_lo is None else round(at_lo)),
                    fmt.count(None if at_hi is None else round(at_hi)), f.absence_text(g.axis)])
    return out


def _projection_rows(ps: Sequence[Projection]) -> list[list[str]]:
    rows = []
    for p in ps:
        interval = ("" if p.low is None or p.high is None else
                    f"{fmt.seconds(p.low)} to {fmt.seconds(p.high)}")
        rows.append([p.fit.label, fmt.seconds(p.value), interval or "none: one run per point", p.fit.text("N")])
    return rows


def _run_rows(sweep: Sweep) -> list[tuple[bool, list[str]]]:
    """(whether the run's folder has its report, the row) of every run."""
    out = []
    for p in sweep.points:
        for r in p.runs:
            compile_s = r.measures.get("total")
            state = "ok" if r.ok else (r.error or f"exit status {r.exit_status}")
            out.append((r.ok, [", ".join(f"{k}={v}" for k, v in p.values.items()), str(r.repeat),
                            fmt.seconds(compile_s) if compile_s is not None else "",
                            fmt.seconds(r.wall_s) if r.wall_s is not None else "", state, r.run_dir]))
    return out


def terminal_lines(sweep: Sweep, g: Growth) -> list[str]:
    """What ``dynaprof sweep`` prints at the end: the verdict, the flags, the projection."""
    lines = [fmt.terminal_safe(line) for line in verdict(g)]
    lines += [fmt.terminal_safe(f"flag: {f.text}") for f in g.flags]
    if g.failed:
        lines.append(f"{fmt.plural(len(g.failed), 'run')} failed: " + "; ".join(
            fmt.terminal_safe(fmt.one_line(f"{g.axis}={x_text(f.x)} run {f.repeat}: {f.error}", 120))
            for f in g.failed[:3]) + (" ..." if len(g.failed) > 3 else ""))
    if sweep.project_at is not None:
        for p in projections(g, sweep.project_at)[:6]:
            interval = "" if p.low is None or p.high is None else f" ({fmt.seconds(p.low)}-{fmt.seconds(p.high)})"
            lines.append(fmt.terminal_safe(f"projected at {g.axis}={x_text(p.at)}: {p.fit.label} "
                                           f"{fmt.seconds(p.value)}{interval}"))
        warn = projection_warning(g, sweep.project_at)
        if warn:
            lines.append(f"warning: {fmt.terminal_safe(warn)}")
    return lines


def growth_tables_md(g: Growth) -> list[str]:
    """The Markdown lines of the growth table (timings) and the exact counts' table."""
    axis = md_escape(g.axis)
    lo, hi = (x_text(g.xs[0]), x_text(g.xs[-1])) if g.xs else ("?", "?")
    out: list[str] = []
    if g.fits:
        out += ["### Growth per cause and phase", "",
                f"t = a * N^k with N = {axis}; the interval is 95% from a bootstrap over each point's runs; "
                "the residual is how far the points sit from the line.", "",
                md_table(["measure", "k", "95% interval", "residual", f"share at {lo}", f"share at {hi}", "absent"],
                         [[md_escape(c) for c in row] for row in _timing_rows(g)], align="lrrrrrl"), ""]
    if g.counts():
        out += ["### Exact counts", "",
                md_table(["count", "k", "95% interval", f"at {lo}", f"at {hi}", "absent"],
                         [[md_escape(c) for c in row] for row in _count_rows(g)], align="lrrrrl"), ""]
    return out


def sweep_markdown(sweep: Sweep, g: Growth) -> str:
    axis = md_escape(g.axis)
    out = [f"# dynaprof sweep: {md_escape(sweep.target)}", "", md_escape(header_line(sweep), 1000), ""]
    out += [f"- **{md_escape(line, 1000)}**" if i == 0 else f"- {md_escape(line, 1000)}"
            for i, line in enumerate(verdict(g))]
    out += [f"- :warning: {md_escape(f.text, 1000)}" for f in g.flags]
    out += ["", f"![compile time against {axis}, log-log]({GROWTH_SVG})", ""]
    out += growth_tables_md(g)
    if sweep.project_at is not None:
        out += [f"### Projected at {axis}={md_escape(x_text(sweep.project_at))}", ""]
        warn = projection_warning(g, sweep.project_at)
        out += [f":warning: {md_escape(warn, 1000)}", ""] if warn else []
        out += [md_table(["measure", "projected", "95% interval", "growth"],
                         [[md_escape(c) for c in row] for row in _projection_rows(projections(g, sweep.project_at))],
                         align="lrrl"), ""]
    out += ["### Runs", "", md_table([axis, "run", "compile", "wall", "status", "folder"],
                                      [[md_escape(c, 300) for c in row] for _, row in _run_rows(sweep)],
                                      align="lrrrll"), ""]
    return "\n".join(out)


@dataclass(frozen=True)
class SweepView:
    """What ``sweep.html`` shows (``templates/sweep.html.j2``)."""

    header: str
    verdict: list[str]
    flags: list[str]
    chart: object  # Markup: our own SVG
    growth: h.Table
    counts: h.Table | None
    projection_title: str
    projection_warning: str
    projection: h.Table | None
    runs: h.Table


def sweep_html(sweep: Sweep, g: Growth, svg: str) -> str:
    lo, hi = (x_text(g.xs[0]), x_text(g.xs[-1])) if g.xs else ("?", "?")
    growth_table = h.table([h.Col("measure"), h.Col("k", True), h.Col("95% interval", True), h.Col("residual", True),
                            h.Col(f"share at {lo}", True), h.Col(f"share at {hi}", True), h.Col("absent")],
                           _timing_rows(g))
    counts = h.table([h.Col("count"), h.Col("k", True), h.Col("95% interval", True), h.Col(f"at {lo}", True),
                      h.Col(f"at {hi}", True), h.Col("absent")], _count_rows(g)) if g.counts() else None
    projection = None
    title = warning = ""
    if sweep.project_at is not None:
        title = f"Projected at {g.axis}={x_text(sweep.project_at)}"
        warning = projection_warning(g, sweep.project_at) or ""
        projection = h.table([h.Col("measure"), h.Col("projected", True), h.Col("95% interval", True),
                              h.Col("growth")], _projection_rows(projections(g, sweep.project_at)))
    runs = h.table([h.Col(g.axis), h.Col("run", True), h.Col("compile", True), h.Col("wall", True), h.Col("status"),
                    h.Col("folder", code=True)],
                   [[*row[:5], h.Cell(links=(h.Link(f"{row[5]}/report.html", row[5]),)) if ok else row[5]]
                    for ok, row in _run_rows(sweep)])
    view = SweepView(header_line(sweep), verdict(g), [f.text for f in g.flags], h.inline_svg(svg), growth_table,
                     counts, title, warning, projection, runs)
    nav = [("summary", "Summary"), ("growth", "Growth"), ("counts", "Counts"), ("projection", "Projection"),
           ("runs", "Runs")]
    present = ["summary", "growth", "runs"] + (["counts"] if counts else []) + (["projection"] if projection else [])
    page = h.Page(f"dynaprof sweep: {fmt.one_line(sweep.target, 100)}", "dynaprof · compile-time growth",
                  fmt.one_line(sweep.target, 300), header_line(sweep), h.nav(present, nav),
                  {"axis": g.axis, "points": list(g.xs)})
    return h.render_page("sweep.html.j2", page, view)


def render_sweep(sweep: Sweep, g: Growth) -> Files:
    """Every file a sweep folder gets beside its points."""
    svg = growth_svg(g)
    return {GROWTH_SVG: svg, SUMMARY_MD: sweep_markdown(sweep, g), REPORT_HTML: sweep_html(sweep, g, svg)}


def compare_markdown(changes: Sequence[ExponentChange], axis: str, names: tuple[str, str],
                     pictures: Sequence[tuple[str, str]] = ()) -> str:
    """Two sweeps' exponents side by side, with the change's interval and whether it is noise
    (``compare.md``, and ``pr``'s comment with ``pictures``: (alt text, file) each)."""
    a = md_escape(axis)
    moved = [c for c in changes if c.verdict in ("steeper", "flatter")]
    head = (f"**{len(moved)} of {len(changes)} exponents changed outside the noise**" if moved
            else f"**No exponent changed outside the noise** ({len(changes)} compared)")
    out = [f"## dynaprof sweep compare: {md_escape(names[0])} -> {md_escape(names[1])}", "", head, ""]
    out += [f"- {md_escape(c.text(axis), 1000)}" for c in moved[:5]]
    out += [""] + [f"![{md_escape(alt)}]({name})" for alt, name in pictures] + [""]
    rows = []
    for c in changes:
        base = c.base.text("N", 2) if c.base is not None else "absent"
        new = c.new.text("N", 2) if c.new is not None else "absent"
        delta = "" if c.delta is None else f"{c.delta:+.2f}"
        interval = "" if c.low is None or c.high is None else f"{c.low:+.2f} to {c.high:+.2f}"
        rows.append([md_escape(c.label), md_escape(base), md_escape(new), delta, interval, md_escape(c.verdict)])
    out += [f"Growth exponents k of t = a * N^k, N = {a} (95% intervals from bootstraps over each point's runs).",
            "", md_table(["measure", "BASE", "NEW", "change", "95% interval", "verdict"], rows, align="lllrrl"), ""]
    return "\n".join(out)
