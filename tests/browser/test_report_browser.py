"""report.html and compare.html in headless Chromium: no fetches, no console errors, and the
flamegraph search/zoom and table sorting work on the inlined page."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from dynaprof.analysis.compare import compare_sessions
from dynaprof.model import Stack
from dynaprof.render.base import RenderContext
from dynaprof.render.compare_report import render_compare
from dynaprof.render.report_html import render_html
from tests.factories import seed_session

pytestmark = pytest.mark.browser

HIGHLIGHT = "rgb(40,210,120)"


class Page:
    """A page that records console errors, page errors and every request it makes."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")

    def assert_clean(self) -> None:
        assert self.errors == []
        bad = [u for u in self.requests if not u.startswith(("file:", "data:"))]
        assert bad == []


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


def test_report_in_browser(browser: Any, tmp_path: Path) -> None:
    html = render_html(RenderContext(seed_session()))["report.html"]
    pg = Page(browser, _write(tmp_path, "report.html", html))
    page = pg.page
    flames = page.locator("div.dp-flame svg.dynaprof-flame")
    assert flames.count() >= 1, "no flamegraph SVG inlined"
    assert page.locator("div.dp-flame svg[data-fg-ready]").count() == flames.count(), "flamegraph script did not run"

    # the user-code view comes first; the compiler view (in its box) next
    assert [flames.nth(i).evaluate("e => e.parentNode.dataset.view") for i in range(2)] == ["traced", "compiler"]
    # search: the "Search" button prompts for a term, matching frames turn green
    first = page.locator('div.dp-flame[data-view="compiler"] svg')
    page.once("dialog", lambda d: d.accept("Linear"))
    first.locator(".fg-search").click()
    assert first.locator(f'rect[fill="{HIGHLIGHT}"]').count() > 0
    assert first.locator(".fg-matched").text_content().startswith("matched ")
    assert first.locator(".fg-search").text_content() == "Reset search"

    # zoom: clicking a narrow frame widens it and shows "Reset zoom"
    frame = first.locator(".fg-panel > g", has=page.locator("title", has_text="CheckFunctionManager")).first
    rect = frame.locator("rect")
    before = float(rect.get_attribute("width"))
    frame.click()
    after = float(rect.get_attribute("width"))
    assert after > before * 2
    assert first.locator(".fg-unzoom").is_visible()
    first.locator(".fg-unzoom").click()
    assert float(rect.get_attribute("width")) == pytest.approx(before, abs=0.2)

    # sorting: the traced-functions table sorts by the clicked column, toggling direction
    th = page.locator("#traced th", has_text="inclusive")

    def column() -> list[float]:
        cells = page.locator("#traced tbody tr td:nth-child(4)")
        return [float(cells.nth(i).get_attribute("data-sort")) for i in range(cells.count())]

    th.click()
    assert th.get_attribute("aria-sort") == "descending"
    assert column() == sorted(column(), reverse=True)
    th.click()
    assert th.get_attribute("aria-sort") == "ascending"
    assert column() == sorted(column())
    name_th = page.locator("#traced th", has_text="traced user function")
    name_th.click()
    names = page.locator("#traced tbody tr td:nth-child(1)").all_text_contents()
    assert names == sorted(names, key=str.lower, reverse=True)

    # per-compile sections collapse and expand
    page.locator("button[data-expand=open]").click()
    assert page.locator("details.dp-frame[open]").count() == page.locator("details.dp-frame").count()
    if page.locator("#callgraph svg").count():
        assert page.locator("#callgraph svg").first.is_visible()
    pg.assert_clean()
    page.close()


def test_compare_in_browser(browser: Any, tmp_path: Path) -> None:
    base, new = seed_session(False), seed_session(True)
    files = render_compare(compare_sessions(base, new), base, new, names=("plain", "parametrized"))
    pg = Page(browser, _write(tmp_path, "compare.html", files["compare.html"]))
    page = pg.page
    assert "+0.84 s parametrization (93% of the growth)" in page.locator(".dp-verdict").text_content()
    flames = page.locator("svg.dynaprof-flame")
    if flames.count():
        page.once("dialog", lambda d: d.accept("compile_frame"))
        flames.first.locator(".fg-search").click()
        assert flames.first.locator(f'rect[fill="{HIGHLIGHT}"]').count() > 0
    th = page.locator("#totals th", has_text="change")
    th.click()
    keys = [c.get_attribute("data-sort") for c in page.locator("#totals tbody td:nth-child(4)").all()]
    known = [float(k) for k in keys if k is not None]
    assert known == sorted(known, reverse=True)
    pg.assert_clean()
    page.close()


def _centre(locator: Any) -> tuple[float, float]:
    box = locator.bounding_box()
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + min(box["height"] / 2, 200)


def _prevented(page: Any, key: str, ctrl: bool = False) -> bool:
    """Dispatch a keydown on the page (as a keystroke would be) and say whether a handler took it."""
    return bool(page.evaluate(
        "([key, ctrl]) => { const e = new KeyboardEvent('keydown', {key: key, ctrlKey: ctrl, bubbles: true, "
        "cancelable: true}); document.body.dispatchEvent(e); return e.defaultPrevented; }", [key, ctrl]))


def test_keys_act_on_the_graph_under_the_pointer(browser: Any, tmp_path: Path) -> None:
    html = render_html(RenderContext(seed_session()))["report.html"]
    pg = Page(browser, _write(tmp_path, "report.html", html))
    page = pg.page
    traced = page.locator('div.dp-flame[data-view="traced"] svg')
    compiler = page.locator('div.dp-flame[data-view="compiler"] svg')

    # Ctrl-F with the pointer over the second graph searches that graph, not the first
    compiler.scroll_into_view_if_needed()
    page.mouse.move(*_centre(compiler))
    asked: list[str] = []

    def answer(d: Any) -> None:
        asked.append(d.message)
        d.accept("Linear")

    page.once("dialog", answer)
    page.keyboard.press("Control+f")
    assert asked, "Ctrl-F over the compiler view did not ask for a search term"
    assert compiler.locator(f'rect[fill="{HIGHLIGHT}"]').count() > 0
    assert traced.locator(f'rect[fill="{HIGHLIGHT}"]').count() == 0

    # Esc over the other graph clears that one only
    traced.scroll_into_view_if_needed()
    page.mouse.move(*_centre(traced))
    assert _prevented(page, "Escape")
    assert compiler.locator(f'rect[fill="{HIGHLIGHT}"]').count() > 0
    compiler.scroll_into_view_if_needed()
    page.mouse.move(*_centre(compiler))
    assert _prevented(page, "Escape")
    assert compiler.locator(f'rect[fill="{HIGHLIGHT}"]').count() == 0

    # away from every graph the browser keeps Ctrl-F (find in page) and Esc
    page.locator("#summary").scroll_into_view_if_needed()
    page.mouse.move(*_centre(page.locator("#summary h2")))
    assert not _prevented(page, "f", ctrl=True)
    assert not _prevented(page, "Escape")
    assert page.evaluate("window.dynaprofActiveGraph") is None
    pg.assert_clean()
    page.close()


def test_callgraph_fits_and_pans(browser: Any, tmp_path: Path) -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz dot not installed")
    from tests.factories import DYN, FunctionTable, frame, make_session

    # a wide graph: a root calling 30 callees side by side
    t = FunctionTable()
    root, mid = t("_compile", DYN + "convert_frame.py", 1), t("compile_frame", DYN + "convert_frame.py", 2)
    stacks = [Stack("0/0", 0, 0, [root, mid, t(f"callee_{i:02d}", DYN + "builder.py", 10 + i)], [], 10, 0.1)
              for i in range(30)]
    s = make_session([frame(compile_time_s=3.0)], stacks, t.functions)
    html = render_html(RenderContext(s))["report.html"]
    pg = Page(browser, _write(tmp_path, "report.html", html))
    page = pg.page
    box = page.locator("#callgraph .dp-callgraph")
    box.scroll_into_view_if_needed()
    assert box.evaluate("b => b.classList.contains('dp-pz')")
    height = box.evaluate("b => b.clientHeight")
    assert height <= page.viewport_size["height"]  # the box fits the page
    # the root's box is on the first screen of the call graph
    node = page.locator("#callgraph g.node", has=page.locator("text", has_text=re.compile("^_compile$"))).first
    nb, bb = node.bounding_box(), box.bounding_box()
    assert nb is not None and bb is not None
    assert bb["x"] <= nb["x"] and nb["x"] + nb["width"] <= bb["x"] + bb["width"]
    assert bb["y"] <= nb["y"] and nb["y"] + nb["height"] <= bb["y"] + bb["height"]
    # text stays readable: at least 7 px for Graphviz's 10 pt labels
    scale = box.evaluate("b => b.clientWidth / b.dynaprofPanZoom.view()[2]")
    assert scale >= 0.7
    # scrolling pans, Ctrl + scroll zooms, "Fit" goes back
    view = box.evaluate("b => b.dynaprofPanZoom.view()")
    page.mouse.move(bb["x"] + bb["width"] / 2, bb["y"] + bb["height"] / 2)
    page.mouse.wheel(300, 0)
    panned = box.evaluate("b => b.dynaprofPanZoom.view()")
    assert panned[0] > view[0] and panned[2] == view[2]
    page.keyboard.down("Control")
    page.mouse.wheel(0, -200)
    page.keyboard.up("Control")
    zoomed = box.evaluate("b => b.dynaprofPanZoom.view()")
    assert zoomed[2] < panned[2]
    page.locator("#callgraph button[data-pz=fit]").click()
    assert box.evaluate("b => b.dynaprofPanZoom.view()") == view
    pg.assert_clean()
    page.close()


def test_a_rolled_up_cause_row_opens_to_its_members(browser: Any, tmp_path: Path) -> None:
    """Issue "one root cause, one finding": the report lets a reader open a rolled-up row."""
    from dynaprof.model.session import Axes, FunctionRef

    s = seed_session()
    sp = "/venv/lib/python3.11/site-packages/transformers/models/mixtral/"
    causes = {"parametrization": 5.0, **{f"forward (mod{i % 3}.py:{i})": 0.1 + 0.001 * i for i in range(60)}}
    s.axes = Axes(causes, {"dynamo_tracing": dict(causes)})
    s.functions = [*s.functions, *(FunctionRef("forward", f"{sp}mod{i}.py", 1, "traced") for i in range(3))]
    html = render_html(RenderContext(s))["report.html"]
    pg = Page(browser, _write(tmp_path, "report.html", html))
    page = pg.page
    btn = page.locator("table.dp-causes button[data-opens]").first
    assert btn.get_attribute("aria-expanded") == "false"
    members = page.locator(f'table.dp-causes tr[data-of="{btn.get_attribute("data-opens")}"]')
    assert members.count() > 1 and not members.first.is_visible()
    btn.click()
    assert btn.get_attribute("aria-expanded") == "true" and members.first.is_visible()
    assert members.first.text_content().strip().startswith("↳ forward (mod")
    btn.click()
    assert not members.first.is_visible()
    pg.assert_clean()
    page.close()


def test_a_suites_report_in_browser(browser: Any, tmp_path: Path) -> None:
    """The suite's report.html: no fetch, no error, its chart inline, each model a link to its
    median run, and its models table sorts by compile time."""
    from dynaprof.model.suite import ORIGIN_DYNAPROF, SUITE_SCHEMA_VERSION, Suite, SuiteEntry, SuiteRun
    from dynaprof.render.suite_report import render_suite

    runs = [SuiteRun(n, 1, f"{n}/1", 0, measures={"total": t}, counts={"guards": g}, kinds={"user_code": t / 2})
            for n, t, g in (("b", 1.0, 10), ("a", 3.0, 30), ("c", 2.0, 20))]
    suite = Suite(SUITE_SCHEMA_VERSION, "zoo.toml", ORIGIN_DYNAPROF, [SuiteEntry(r.entry, "x.py") for r in runs], 1,
                  True, "local", 1, ["dynaprof", "suite"], "", "2.13.0", "0", runs)
    pg = Page(browser, _write(tmp_path, "report.html", str(render_suite(suite)["report.html"])))
    page = pg.page
    assert page.locator("svg rect[fill='#0072b2']:has(title)").count() == 3  # a user-code part in each bar
    assert [a.get_attribute("href") for a in page.locator("#models a").all()] == ["a/1/report.html",
                                                                                   "c/1/report.html",
                                                                                   "b/1/report.html"]
    page.locator("#models th", has_text="compile (median)").click()
    keys = [float(c.get_attribute("data-sort") or 0) for c in page.locator("#models tbody td:nth-child(2)").all()]
    assert sorted(keys) in (keys, keys[::-1]) and len(keys) == 3
    pg.assert_clean()
    page.close()
