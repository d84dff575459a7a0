"""A sweep's outputs: the growth chart is a static SVG that parses, every user label is escaped in
SVG, HTML and Markdown, and the outputs are deterministic (no torch)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from dynaprof.analysis.growth import growth
from dynaprof.analysis.growth_gate import compare_sweeps
from dynaprof.render.growth_chart import growth_svg
from dynaprof.render.sweep_report import GROWTH_SVG, REPORT_HTML, SUMMARY_MD, compare_markdown, render_sweep
from tests.sweeps import make_sweep, restart_sweep

SVG_NS = "{http://www.w3.org/2000/svg}"
EVIL = '<script>alert(1)</script> & "x" | `y` [z](http://e.x)'


def _evil_sweep():  # type: ignore[no-untyped-def]
    sweep = make_sweep({"total": lambda n: 0.1 * n, f"cause:{EVIL}": lambda n: 0.05 * n ** 2,
                        "group:guard_building": lambda n: 0.02 * n}, {"guards": lambda n: 3 * n}, axis="L_AYERS")
    sweep.target = "<b>model</b>.py"
    sweep.points[1].runs[0].error = "exit status 1: <img src=x onerror=alert(1)>"
    sweep.points[1].runs[0].exit_status = 1
    return sweep


def test_the_chart_is_a_static_svg_with_one_line_per_cost_that_matters() -> None:
    g = growth(restart_sweep())
    svg = growth_svg(g)
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG_NS}svg" and root.get("font-family") == "sans-serif"
    assert not list(root.iter(f"{SVG_NS}script")) and "href" not in svg and "@font-face" not in svg
    lines = [el for el in root.iter(f"{SVG_NS}line") if el.find(f"{SVG_NS}title") is not None]
    drawn = g.drawn()
    assert len(lines) == len(drawn) and {f.measure for f in drawn} >= {"total", "restart_waste"}
    dots = list(root.iter(f"{SVG_NS}circle"))
    assert len(dots) == sum(len(f.values) for f in drawn)  # every run of every line, as a point
    labels = ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]
    assert any(t.startswith("restart waste N^2.0 (") for t in labels)


def test_a_chart_with_nothing_to_draw_still_parses() -> None:
    sweep = make_sweep({"total": lambda n: 0.1 * n}, xs=(4,))
    assert "fewer than two points" in growth_svg(growth(sweep))
    ET.fromstring(growth_svg(growth(sweep)))


def test_user_labels_are_escaped_everywhere() -> None:
    sweep = _evil_sweep()
    files = render_sweep(sweep, growth(sweep))
    assert set(files) == {GROWTH_SVG, SUMMARY_MD, REPORT_HTML}
    svg, md, html = str(files[GROWTH_SVG]), str(files[SUMMARY_MD]), str(files[REPORT_HTML])
    ET.fromstring(svg)
    assert "<script>alert" not in svg and "&lt;script&gt;" in svg
    for text in (md, html):
        assert "<script>alert" not in text and "<img src=x" not in text and "<b>model" not in text
    assert "&lt;script&gt;" in md and "\\|" in md  # HTML entities and table pipes escaped
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert html.count("<script") == 2  # the page's own: its JSON island and its script


def test_outputs_are_deterministic_and_say_what_failed() -> None:
    sweep = _evil_sweep()
    a, b = render_sweep(sweep, growth(sweep)), render_sweep(sweep, growth(sweep))
    assert a == b
    md = str(a[SUMMARY_MD])
    assert "exit status 1" in md and "| L\\_AYERS=8 | 1 |" in md


def test_the_comparison_lists_each_exponent_before_and_after() -> None:
    _, gn, changes = compare_sweeps(restart_sweep(1.0, seed=1), restart_sweep(2.0, seed=2))
    md = compare_markdown(changes, gn.axis, ("a|b", "new"), [("chart", "growth-new.svg")])
    assert "a\\|b -> new" in md and "![chart](growth-new.svg)" in md
    row = next(line for line in md.splitlines() if line.startswith("| restart waste |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1][:5] in ("N^1.0", "N^0.9") and cells[2][:5] in ("N^1.9", "N^2.0")
    assert cells[-1] == "steeper" and cells[3].startswith("+")
