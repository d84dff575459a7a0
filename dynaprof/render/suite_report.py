"""A suite's outputs beside its run folders: ``summary.md``, ``report.html`` (the picture inline)
and ``causes.svg``; the lines ``dynaprof suite`` prints; and two suites compared (``compare.md``,
``pr``'s comment). Every renderer returns text; user text (names, causes, errors) is escaped for
each format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dynaprof import fmt
from dynaprof.analysis.noise import LEVEL, METHOD
from dynaprof.analysis.suite_compare import SuiteComparison
from dynaprof.analysis.suite_facts import KindTotal, ModelSummary, kind_totals, model_summaries
from dynaprof.model.phases import CATEGORY_LABELS
from dynaprof.model.suite import ORIGIN_HARNESS, SUITE_COUNTS, Suite
from dynaprof.render import html_toolkit as h
from dynaprof.render.base import Files
from dynaprof.render.markdown import md_escape, md_table
from dynaprof.render.suite_chart import suite_svg

SUMMARY_MD = "summary.md"
REPORT_HTML = "report.html"
CAUSES_SVG = "causes.svg"
COMPARE_MD = "compare.md"


def header_line(suite: Suite) -> str:
    """``12 models x 3 runs, cold compiler caches, local executor, 2 workers; torch 2.13.0``"""
    if suite.origin == ORIGIN_HARNESS:
        return (f"{fmt.plural(len({r.entry for r in suite.runs}), 'model')} from PyTorch's benchmark harness "
                "CSV: compile times only, no causes")
    caches = "cold compiler caches" if suite.cold else "warm compiler caches"
    torch = f"; torch {suite.torch_version}" if suite.torch_version else ""
    stopped = "; interrupted: the runs that came back" if suite.interrupted else ""
    return (f"{fmt.plural(len(suite.entries), 'model')} x {fmt.plural(suite.repeat, 'run')}, {caches}, "
            f"{suite.executor} executor, {fmt.plural(suite.workers, 'worker')}{torch}{stopped}")


def _phase(m: ModelSummary) -> str:
    if m.hottest_phase is None:
        return ""
    name, secs = m.hottest_phase
    return f"{CATEGORY_LABELS.get(name, name)} {fmt.seconds(secs)}"


def _cause(m: ModelSummary) -> str:
    return "" if m.hottest_cause is None else f"{m.hottest_cause[0]} {fmt.seconds(m.hottest_cause[1])}"


def _spread(m: ModelSummary) -> str:
    return "" if m.spread is None else f"{m.spread:.0%}"


def _model_rows(models: Sequence[ModelSummary]) -> list[list[str]]:
    """Plain text cells: name, median, spread, runs, hottest cause, hottest phase, counts..., failures."""
    rows = []
    for m in models:
        counts = [fmt.count(m.counts.get(k)) if k in m.counts else "" for k in SUITE_COUNTS]
        failed = "; ".join(f"run {r.repeat}: {r.error}" for r in m.failed)
        rows.append([m.name, fmt.seconds(m.median_s) if m.median_s is not None else "no run finished", _spread(m),
                     str(m.runs), _cause(m), _phase(m), *counts, failed])
    return rows


_HEAD = ["model", "compile (median)", "spread", "runs", "hottest cause", "hottest phase",
         *SUITE_COUNTS.values(), "runs that failed"]


def _kind_rows(total: float, kinds: Sequence[KindTotal]) -> list[list[str]]:
    return [[k.label, fmt.seconds(k.seconds), fmt.pct(k.seconds, total),
             ", ".join(f"{n} {fmt.seconds(s)}" for n, s in k.top)] for k in kinds]


def terminal_lines(suite: Suite, models: Sequence[ModelSummary]) -> list[str]:
    total, kinds = kind_totals(models)
    lines = [header_line(suite), f"compile time, all models (sum of medians): {fmt.seconds(total)}"]
    lines += [f"{k.label}: {fmt.seconds(k.seconds)} ({fmt.pct(k.seconds, total)}), most in "
              + ", ".join(f"{n} {fmt.seconds(s)}" for n, s in k.top) for k in kinds[:4]]
    for m in models[:5]:
        if m.median_s is not None:
            lines.append(f"{m.name}: {fmt.seconds(m.median_s)}" + (f", hottest {_cause(m)}" if m.hottest_cause else ""))
    failed = [m for m in models if m.failed]
    if failed:
        lines.append(f"{fmt.plural(len(failed), 'model')} with failed runs: " + ", ".join(m.name for m in failed[:8]))
    return [fmt.terminal_safe(x) for x in lines]


def suite_markdown(suite: Suite, models: Sequence[ModelSummary]) -> str:
    total, kinds = kind_totals(models)
    out = [f"## dynaprof suite: {md_escape(suite.source, 200)}", "", md_escape(header_line(suite), 500), ""]
    out += [f"> {md_escape(n, 1000)}" for n in suite.notes] + ([""] if suite.notes else [])
    out += [f"**Compile time, all models: {fmt.seconds(total)}** (the sum of each model's median run)", ""]
    if kinds:
        out += ["### Causes across the suite", "",
                md_table(["kind of cause", "seconds", "share", "weighs most in"],
                         [[md_escape(c) for c in row] for row in _kind_rows(total, kinds)], align="lrrl"), "",
                f"![compile time per model, by kind of cause]({CAUSES_SVG})", ""]
    elif suite.origin != ORIGIN_HARNESS:
        out += ["No run was sampled: no causes (run with `--sampler builtin`).", ""]
    out += ["### Models", "", md_table(_HEAD, [[md_escape(c) for c in row] for row in _model_rows(models)],
                                       align="lrrrll" + "r" * len(SUITE_COUNTS) + "l"), ""]
    harness = _harness_rows(suite)
    if harness:
        out += ["### The dashboard's figures", "", md_table(["model", *harness[0]], [
            [md_escape(c) for c in row] for row in harness[1]]), ""]
    return "\n".join(out)


def _harness_rows(suite: Suite) -> tuple[list[str], list[list[str]]] | None:
    cols = sorted({k for r in suite.runs for k in r.harness})
    if not cols:
        return None
    rows = [[r.entry, *(f"{r.harness[c]:g}" if c in r.harness else "" for c in cols)]
            for r in sorted(suite.runs, key=lambda r: (r.entry, r.repeat))]
    return cols, rows


@dataclass(frozen=True)
class SuiteView:
    header: str
    notes: list[str]
    total: str
    chart: object
    kinds: h.Table | None
    models: h.Table
    harness: h.Table | None


def suite_html(suite: Suite, models: Sequence[ModelSummary], svg: str) -> str:
    total, kinds = kind_totals(models)
    kind_table = h.table([h.Col("kind of cause"), h.Col("seconds", True), h.Col("share", True),
                          h.Col("weighs most in")],
                         [[k.label, h.secs(k.seconds), (fmt.pct(k.seconds, total), k.share), r[3]]
                          for k, r in zip(kinds, _kind_rows(total, kinds), strict=True)]) if kinds else None
    rows = []
    for m, row in zip(models, _model_rows(models), strict=True):
        link = h.Cell(links=(h.Link(f"{m.median_run.run_dir}/report.html", m.name),)) \
            if m.median_run is not None and m.median_run.run_dir else m.name
        rows.append([link, (row[1], m.median_s), (row[2], m.spread), (row[3], float(m.runs)), row[4], row[5],
                     *[(c, float(m.counts[k]) if k in m.counts else None) for c, k in zip(row[6:-1], SUITE_COUNTS,
                                                                                           strict=True)], row[-1]])
    cols = [h.Col("model", code=True), h.Col("compile (median)", True), h.Col("spread", True), h.Col("runs", True),
            h.Col("hottest cause"), h.Col("hottest phase"), *[h.Col(x, True) for x in SUITE_COUNTS.values()],
            h.Col("runs that failed")]
    harness = _harness_rows(suite)
    harness_table = h.table([h.Col("model", code=True), *[h.Col(c, True) for c in harness[0]]],
                            harness[1]) if harness else None
    view = SuiteView(header_line(suite), list(suite.notes), fmt.seconds(total), h.inline_svg(svg), kind_table,
                     h.table(cols, rows), harness_table)
    present = ["summary", "models"] + (["harness"] if harness_table else [])
    page = h.Page(f"dynaprof suite: {fmt.one_line(suite.source, 100)}", "dynaprof · suite",
                  fmt.one_line(suite.source, 300), header_line(suite),
                  h.nav(present, [("summary", "Summary"), ("models", "Models"), ("harness", "Dashboard")]), None)
    return h.render_page("suite.html.j2", page, view)


def render_suite(suite: Suite) -> Files:
    """Every file a suite folder gets beside its runs."""
    models = model_summaries(suite)
    svg = suite_svg(models)
    return {CAUSES_SVG: svg, SUMMARY_MD: suite_markdown(suite, models), REPORT_HTML: suite_html(suite, models, svg)}


def compare_lines(cmp: SuiteComparison) -> list[str]:
    return [fmt.terminal_safe(cmp.headline()), fmt.terminal_safe(cmp.geomean_text())]


def compare_suites_markdown(cmp: SuiteComparison, names: tuple[str, str]) -> str:
    """Two suites model by model (``compare.md``, and ``pr``'s comment)."""
    out = [f"## dynaprof suite compare: {md_escape(names[0])} -> {md_escape(names[1])}", "",
           f"**{md_escape(cmp.headline(), 2000)}**", "", md_escape(cmp.geomean_text(), 500), "",
           f"Verdicts: {LEVEL:.0%} {METHOD}, practical margin {cmp.margin:.0%} (as `dynaprof compare`).", ""]
    rows = []
    for m in sorted(cmp.models, key=lambda m: (-abs(m.delta_s or 0.0), m.name)):
        v = m.verdict
        counts = ", ".join(f"{label} {fmt.count(b)} -> {fmt.count(n)}" for label, b, n in m.counts)
        moved = "" if m.moved is None else f"{m.moved[0]} {fmt.duration(m.moved[1], 'compare', sign=True)}"
        rows.append([md_escape(m.name), fmt.seconds(v.base_median) if v else "", fmt.seconds(v.new_median) if v else "",
                     md_escape(v.change_text()) if v else "", md_escape(v.interval_text()) if v else "",
                     md_escape(v.verdict if v else m.side_note()), md_escape(moved), md_escape(counts, 400)])
    out += [md_table(["model", "BASE", "NEW", "change", f"{LEVEL:.0%} interval", "verdict", "moved most",
                      "exact counts that changed"], rows, align="lrrrrlll"), ""]
    return "\n".join(out)
