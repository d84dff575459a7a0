"""``compare.md`` and ``compare.html`` (plus the differential flamegraph SVGs) for two runs.

Takes a :class:`dynaprof.analysis.compare.Comparison` and both sessions; like every renderer it
returns files as values (``dynaprof compare`` writes them). Both documents are built from the
same rows so they always agree; the HTML inlines the differential flamegraphs (red: more time in
NEW, blue: less) and needs no network.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from dynaprof import fmt
from dynaprof.analysis import how_made, noise
from dynaprof.analysis.compare import (
    FRAME_METRICS,
    FRAME_WORK,
    METRICS,
    REAL,
    Change,
    Comparison,
    biggest_changes,
    cause_changes,
    cause_phase_text,
    change_text,
    delta_text,
    value,
    verdict_lines,
    work_cell,
    work_changes,
)
from dynaprof.analysis.stacks import View
from dynaprof.model.session import CATEGORY_LABELS, CAUSE_PARAMETRIZATION, Session
from dynaprof.render import cache_section
from dynaprof.render import html_toolkit as h
from dynaprof.render import markdown as md
from dynaprof.render.base import TABLE_ROWS, Files, RenderOptions, page_rows
from dynaprof.render.report_facts import frame_time, frame_where, sampler_text

VIEWS: tuple[tuple[View, str], ...] = (("compiler", "compiler stacks"), ("traced", "traced user code"))


@dataclass(frozen=True)
class Row:
    """One table row: the label, then BASE, NEW and change as text; ``key`` sorts the change."""

    label: str
    base: str
    new: str
    change: str
    key: float | None
    direction: int  # +1 more in NEW, -1 less, 0 same/unknown


def _row(label: str, metric: str, c: Change, normalize: bool) -> Row:
    d = c.delta
    return Row(label, value(metric, c.base, normalize), value(metric, c.new, normalize),
               delta_text(metric, c, normalize), d,
               0 if d is None or not c.changed else (1 if d > 0 else -1))


def total_rows(cmp: Comparison) -> list[Row]:
    return [_row(label, k, cmp.totals[k], cmp.normalize and k not in ("compile_s",))
            for k, label in METRICS.items() if cmp.totals[k].base is not None or cmp.totals[k].new is not None]


def category_rows(cmp: Comparison) -> list[Row]:
    rows = [_row(CATEGORY_LABELS.get(k, k), "cat_s", c, cmp.normalize) for k, c in cmp.categories.items()
            if (c.base or 0) > 0 or (c.new or 0) > 0]
    return sorted(rows, key=lambda r: -abs(r.key or 0.0))


def cause_rows(cmp: Comparison, limit: int = TABLE_ROWS) -> list[tuple[Row, str]]:
    """(row, the phases that moved for it) per changed cause, largest change first."""
    return [(_row("parametrization" if k == CAUSE_PARAMETRIZATION else k, "cause_s", c, cmp.normalize),
             cause_phase_text(cmp, k)) for k, c in cause_changes(cmp)[:limit]]


def _short(metric: str, c: Change, normalize: bool) -> str:
    if not c.changed:
        return value(metric, c.new, normalize)
    return f"{value(metric, c.base, normalize)} -> {value(metric, c.new, normalize)}"


def frame_rows(cmp: Comparison) -> list[tuple[str, str, list[str], float | None]]:
    """(location, "base id -> new id", cells per FRAME_METRICS, compile delta) biggest change first."""
    out = []
    for p in biggest_changes(cmp):
        ids = p.base.trace_id if p.base.trace_id == p.new.trace_id else f"{p.base.trace_id} -> {p.new.trace_id}"
        cells = [_short(k, p.metrics[k], cmp.normalize) for k in FRAME_METRICS]
        d = p.metrics["compile_s"].delta
        if d is not None and p.metrics["compile_s"].changed:
            cells[0] += f" ({value('compile_s', d, cmp.normalize, True)})"
        out.append((frame_where(p.new), ids, cells, d))
    return out


def noise_cells(v: noise.Verdict) -> list[str]:
    """A verdict as table cells: measure, medians, change, interval, verdict (escaped)."""
    return [md.md_escape(v.what), fmt.seconds(v.base_median), fmt.seconds(v.new_median), v.change_text(),
            v.interval_text() or f"none (under {noise.MIN_RUNS} runs)", md.md_escape(v.verdict)]


def method_text(cmp: Comparison) -> str:
    """How the noise verdict is reached, in one sentence."""
    return (f"{noise.LEVEL:.0%} interval: {noise.METHOD}; {noise.WITHIN} when it holds x1 or the change is under "
            f"the {cmp.margin:.0%} margin; {noise.TOO_FEW} under {noise.MIN_RUNS} runs a side")


def environment_rows(base: Session, new: Session) -> list[tuple[str, str, str]]:
    rows = []
    made = zip(how_made.provenance_facts(base), how_made.provenance_facts(new), strict=True)
    for label, b, n in (
        *((bl, bv, nv) for (bl, bv), (_, nv) in made if bl != "command"),
        ("device", base.run.device or "?", new.run.device or "?"),
        ("sampler", sampler_text(base), sampler_text(new)),
        ("started", base.run.start_time, new.run.start_time),
        ("repro", how_made.repro_line(base), how_made.repro_line(new)),
    ):
        rows.append((label, b, n))
    return rows


def caveats(base: Session, new: Session, normalize: bool) -> list[str]:
    out = []
    for what, b, n in (("torch", base.run.torch_version, new.run.torch_version),
                       ("device", base.run.device, new.run.device)):
        if b != n:
            out.append(f"the runs used different {what} ({b or '?'} vs {n or '?'})")
    out += [f"the runs were made differently: {d}" for d in how_made.differences(base, new)]
    rb = base.samples.achieved_hz if base.samples else None
    rn = new.samples.achieved_hz if new.samples else None
    if rb and rn and not normalize and max(rb, rn) > 1.5 * min(rb, rn):
        out.append(f"sampling rates differ ({rb:,.0f} Hz vs {rn:,.0f} Hz); --normalize compares shares instead")
    if (base.samples is None) != (new.samples is None):
        out.append("only one of the runs was sampled; attribution deltas are unknown")
    if (base.axes is None) != (new.axes is None):  # both without: nothing sampled, said elsewhere
        which = "BASE" if base.axes is None else "NEW"
        out.append(f"the cause view is unavailable: {which} has no cause x phase data (no samples, an older "
                   "session or a TORCH_TRACE import); the change is explained by phase only")
    return out


def diff_svgs(base: Session, new: Session, options: RenderOptions, names: tuple[str, str],
              normalize: bool) -> dict[str, str]:
    """``diff-<view>.svg`` for both stack views."""
    from dynaprof.analysis.derived import Derived
    from dynaprof.analysis.stacks import build_tree
    from dynaprof.render.flamegraph import diff_flamegraph_svg

    out = {}
    derived = {id(base): Derived(base), id(new): Derived(new)}  # each run's stacks classified once, for both views
    for view, label in VIEWS:
        what = "share of compile time" if normalize else "compile time"
        out[f"diff-{view}.svg"] = diff_flamegraph_svg(
            # the compiler view as user calls, as its flamegraph draws it (analysis.interpreter_frames):
            # the runs line up by user call
            build_tree(base, view, user_calls=view == "compiler", derived=derived[id(base)]),
            build_tree(new, view, user_calls=view == "compiler", derived=derived[id(new)]),
            title=f"{names[0]} -> {names[1]}: {label}",
            subtitle=f"differential flamegraph of {what} by {label}; BASE {names[0]}, NEW {names[1]}",
            options=options, normalize=normalize)
    return out


# ---------------------------------------------------------------------------------------------
# Markdown


def compare_markdown(cmp: Comparison, base: Session, new: Session, names: tuple[str, str], links: list[str],
                     max_rows: int = TABLE_ROWS) -> str:
    def e(text: object, limit: int | None = md.CELL_CHARS) -> str:
        return md.md_escape(text, limit).replace(" -&gt; ", " → ")

    out = [f"### dynaprof compare: {e(names[0])} -> {e(names[1])}", ""]
    # exact counts that moved, then the noise verdict of repeated runs, then how the runs were ordered
    for word, text in verdict_lines(cmp):
        out += [f"> Note: {e(text, 600)}" if word == "note" else f"**{e(word.capitalize())}:** {e(text, 1000)}", ""]
    if cmp.noise:
        out += [f"_{e(method_text(cmp))}._", ""]
    out += [f"**{'Normalized (shares of compile time)' if cmp.normalize else 'Change'}:** {e(cmp.headline, 1000)}"]
    for c in caveats(base, new, cmp.normalize):
        out += ["", f"> Note: {e(c, 300)}"]
    if links:
        out += ["", " · ".join(f"[{e(x)}]({x})" for x in links)]
    hdr = ["", "BASE", "NEW", "change"]
    out += ["", "#### Totals", "", md.md_table(["metric", *hdr[1:]], [[e(r.label), e(r.base), e(r.new), e(r.change)]
                                                                      for r in total_rows(cmp)], align="lrrr")]
    if len(cmp.noise) > 1:
        title = "Over repeated runs: total, phases (torch's timed spans) and causes (sampled)"
        out += ["", md.details(title, md.md_table(
            ["measure", "BASE median", "NEW median", "change", f"{noise.LEVEL:.0%} interval", "verdict"],
            [noise_cells(v) for v in cmp.noise[:max_rows + 1]], len(cmp.noise), "measures", "lrrrrl"), True)]
    crows = cause_rows(cmp, max_rows)
    if crows:
        title = "By cause (share of compile time)" if cmp.normalize else "By cause (sampled seconds)"
        out += ["", md.details(title, md.md_table(["cause", *hdr[1:], "phases that moved"],
                                                  [[e(r.label), r.base, r.new, e(r.change), e(how, 300)]
                                                   for r, how in crows], align="lrrrl"), True)]
    cats = category_rows(cmp)
    if cats:
        title = "By phase (share of compile time)" if cmp.normalize else "By phase (sampled seconds)"
        out += ["", md.details(title, md.md_table(["phase", *hdr[1:]], [[e(r.label), r.base, r.new, e(r.change)]
                                                                           for r in cats], align="lrrr"), True)]
    frows = frame_rows(cmp)
    if frows:
        body = [[e(loc), e(ids), *(e(c) for c in cells)] for loc, ids, cells, _ in frows[:max_rows]]
        table = md.md_table(["frame", "compile id", *(METRICS[k] for k in FRAME_METRICS)], body, len(frows),
                            "frames", "ll" + "r" * len(FRAME_METRICS))
        out += ["", "#### Matched frames (largest change first)", "", table]
    work = work_changes(cmp)
    if work:
        body = [[e(frame_where(p.new)), e(p.new.trace_id), *(e(work_cell(*counts[k])) for k in FRAME_WORK)]
                for p, counts in work[:max_rows]]
        out += ["", md.details(f"Exact work counts per compile ({len(work):,} changed)", md.md_table(
            ["frame", "compile id", *FRAME_WORK.values()], body, len(work), "frames", "ll" + "r" * len(FRAME_WORK)))]
    for label, frames in (("Only in BASE", cmp.only_base), ("Only in NEW", cmp.only_new)):
        if frames:
            body = [[e(f.trace_id), e(frame_where(f)), frame_time(f), fmt.count(f.guard_count)]
                    for f in frames[:max_rows]]
            out += ["", md.details(f"{label} ({len(frames):,})", md.md_table(
                ["compile id", "frame", "time", "guards"], body, len(frames), "frames", "llrr"))]
    if cache := cache_section.compare_view(base, new):
        out += ["", f"#### {cache_section.TITLE}", "", *(f"- {e(t, 600)}" for t in cache.lines)]
    env = [[e(k), e(b, 1000), e(n, 1000)] for k, b, n in environment_rows(base, new) if k != "repro"]
    repro = [f"Reproduce {which} (in its working directory):\n\n"
             + md.md_code_block(how_made.repro_line(run)[:2000], "sh") for which, run in (("BASE", base), ("NEW", new))]
    out += ["", md.details("How they were made", md.md_table(["setting", "BASE", "NEW"], env) + "\n\n"
                           + "\n\n".join(repro))]
    text = "\n".join(out) + "\n"
    if len(text) >= md.MAX_CHARS and max_rows > 3:
        return compare_markdown(cmp, base, new, names, links, max(3, max_rows // 3))
    return text


# ---------------------------------------------------------------------------------------------
# HTML (templates/compare.html.j2)


@dataclass(frozen=True)
class CompareView:
    """What ``compare.html`` shows, as text ready to print; each optional section is (title, table)."""

    headline: str
    kpis: list[h.Kpi]
    notes: list[str]
    totals: h.Table
    causes: tuple[str, h.Table] | None
    attribution: tuple[str, h.Table] | None
    graphs: list[tuple[str, Markup]]  # (view, the differential flamegraph from our SVG writer)
    frames: tuple[str, h.Table] | None
    only: list[tuple[str, str, h.Table]]  # (anchor, title, table) for the frames found in one run only
    environment: h.Table
    cache: cache_section.CacheSection | None = None  # templates/cache_section.html.j2


COMPARE_NAV = (("summary", "Summary"), ("totals", "Totals"), ("causes", "Causes"), ("attribution", "Phases"),
               ("flamegraphs", "Flamegraphs"), ("frames", "Frames"), ("only-base", "Only BASE"),
               ("only-new", "Only NEW"), ("cache", "Cache"), ("environment", "Environment"))


def _change_cell(r: Row) -> h.Cell:
    return h.Cell(r.change, r.key, "dp-up" if r.direction > 0 else "dp-down" if r.direction < 0 else "dp-muted")


def _arrows(text: str) -> str:
    return text.replace(" -> ", " → ")


def _row_table(first: str, rows: list[Row]) -> h.Table:
    cols = [h.Col(first), h.Col("BASE", True), h.Col("NEW", True), h.Col("change", True)]
    return h.table(cols, [[r.label, r.base, r.new, _change_cell(r)] for r in rows])


def compare_view(cmp: Comparison, base: Session, new: Session, svgs: dict[str, str],
                 max_rows: int = TABLE_ROWS) -> CompareView:
    """What ``compare.html`` shows; its tables list ``base.page_rows(max_rows)`` rows."""
    limit = page_rows(max_rows)
    t = cmp.totals
    kpis = [h.Kpi(METRICS[k], _arrows(change_text(k, t[k], False).split(" (")[0]))
            for k in ("compile_s", "guards", "restarts", "graph_breaks", "frames")]
    causes = None
    crows = cause_rows(cmp, limit)
    if crows:
        cols = [h.Col("cause", code=True), h.Col("BASE", True), h.Col("NEW", True), h.Col("change", True),
                h.Col("phases that moved")]
        causes = ("By cause (share of compile time)" if cmp.normalize else "By cause (sampled seconds)",
                  h.table(cols, [[r.label, r.base, r.new, _change_cell(r), how] for r, how in crows]))
    cats = category_rows(cmp)
    attribution = (("By phase (share of compile time)" if cmp.normalize else "By phase (sampled seconds)",
                    _row_table("phase", cats)) if cats else None)
    graphs: list[tuple[str, Markup]] = [(v, h.inline_svg(svgs[f"diff-{v}.svg"])) for v, _ in VIEWS
                                        if f"diff-{v}.svg" in svgs]
    frames = None
    frows = frame_rows(cmp)
    if frows:
        cols = [h.Col("frame", code=True), h.Col("compile id", code=True, nowrap=True),
                *(h.Col(METRICS[k], True) for k in FRAME_METRICS)]
        rows = [[loc, _arrows(ids), (_arrows(cells[0]), d), *map(_arrows, cells[1:])]
                for loc, ids, cells, d in frows[:limit]]
        frames = (f"Matched frames ({len(frows):,})", h.table(cols, rows, total=len(frows), noun="frames"))
    only = []
    for anchor, label, found in (("only-base", "Only in BASE", cmp.only_base), ("only-new", "Only in NEW",
                                                                                 cmp.only_new)):
        if found:
            cols = [h.Col("compile id", code=True, nowrap=True), h.Col("frame", code=True), h.Col("time", True),
                    h.Col("guards", True)]
            only.append((anchor, f"{label} ({len(found):,})", h.table(
                cols, [[f.trace_id, frame_where(f), h.secs(f.compile_time_s), h.num(f.guard_count)]
                       for f in found[:limit]], total=len(found))))
    env = h.table([h.Col("setting"), h.Col("BASE"), h.Col("NEW")], [list(r) for r in environment_rows(base, new)],
                  sortable=False)
    lead = [_arrows(text) if word == "note" else f"{REAL}: {_arrows(text)}" if word == REAL else
            f"over repeated runs, {_arrows(text)}" for word, text in verdict_lines(cmp)]
    if cmp.noise:
        lead.append(method_text(cmp))
    return CompareView(_arrows(cmp.headline), kpis, lead + caveats(base, new, cmp.normalize),
                       _row_table("metric", total_rows(cmp)), causes, attribution, graphs, frames, only, env,
                       cache_section.compare_view(base, new))


def compare_html(cmp: Comparison, base: Session, new: Session, names: tuple[str, str], svgs: dict[str, str],
                 max_rows: int = TABLE_ROWS) -> str:
    v = compare_view(cmp, base, new, svgs, max_rows)
    present = ["summary", "totals", "environment", *(a for a, _, _ in v.only)]
    present += [a for a, shown in (("causes", v.causes), ("attribution", v.attribution), ("flamegraphs", v.graphs),
                                   ("frames", v.frames), ("cache", v.cache)) if shown]
    page = h.Page(f"dynaprof compare: {names[0]} -> {names[1]}", "dynaprof · compile-time comparison",
                  f"{names[0]} → {names[1]}",
                  f"BASE {how_made.script_path(base.run)} ({base.run.start_time}) · "
                  f"NEW {how_made.script_path(new.run)} ({new.run.start_time})"
                  + (" · normalized" if cmp.normalize else ""), h.nav(present, COMPARE_NAV),
                  {"headline": cmp.headline, "base": names[0], "new": names[1], "normalize": cmp.normalize})
    return h.render_page("compare.html.j2", page, v)


def render_compare(cmp: Comparison, base: Session, new: Session, *, names: tuple[str, str],
                   options: RenderOptions | None = None) -> Files:
    """``compare.md``, ``compare.html`` and ``diff-compiler.svg`` / ``diff-traced.svg``."""
    options = options or RenderOptions()
    svgs = diff_svgs(base, new, options, names, cmp.normalize)
    links = ["compare.html", *sorted(svgs)]
    files: Files = {"compare.md": compare_markdown(cmp, base, new, names, links, options.max_rows),
                    "compare.html": compare_html(cmp, base, new, names, svgs, options.max_rows)}
    files.update(svgs)
    return files
