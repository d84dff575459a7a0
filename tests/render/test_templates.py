"""The HTML pages come from Jinja2 templates with autoescaping: hostile text in every field that
comes from user code (or the user's machine) is shown as text in report.html, compare.html,
ranks.html and the rank-by-rank compare.html, never as markup, and template syntax in a name is
printed, not evaluated. Also: the environment's settings and the templates shipped as package data.
"""

from __future__ import annotations

import json
from fnmatch import fnmatch
from html.parser import HTMLParser
from importlib import resources

import jinja2
import pytest
from markupsafe import Markup

from dynaprof.analysis.compare import compare_sessions
from dynaprof.analysis.ranks import merge_ranks
from dynaprof.model import GraphBreak, GuardStats, Location, PropertyTrace, Session, Stack
from dynaprof.model.session import RestartReason
from dynaprof.render.base import RenderContext
from dynaprof.render.compare_report import render_compare
from dynaprof.render.html_toolkit import Col, environment, inline_svg, table
from dynaprof.render.ranks import RankComparison, compare_index, ranks_html
from dynaprof.render.report_html import render_html
from tests.factories import SP, FunctionTable, frame, make_session
from tests.helpers import ROOT_DIR

ROOT = ROOT_DIR


def H(field: str) -> str:
    """Hostile text naming its field: a script, an element with a handler, an attribute break-out
    and template syntax (no '/', so file names keep all of it as their base name)."""
    return f'<script>alert(1)<img src=x onerror=alert(2)>"onload="alert(3)" {{{{ 7*7 }}}} {{% raw %}} [{field}]'


#: a name that is a whole template program: evaluated, it would print XXX (and 49)
PROGRAM = "{% for i in range(3) %}X{% endfor %}{{ 7*7 }}{{ config }}{{ self.__init__.__globals__ }}"


class Page(HTMLParser):
    """The text a reader sees (also inside inline SVG), every element and attribute, the scripts."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)
        self.close()
        self.shown = "".join(self.text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        if tag in ("script", "style"):
            self._in.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1][0] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        if not self._in:
            self.text.append(data)
        elif self._in[-1][0] == "script":
            self.scripts.append((self._in[-1][1], data))


def assert_inert(text: str, fields: list[str]) -> Page:
    """No user text became markup, and each field's hostile text is shown whole, as text."""
    page = Page(text)
    assert text.count("<script") == sum(tag == "script" for tag, _ in page.tags)  # no script element from data
    for tag, attrs in page.tags:
        assert tag.rsplit(":", 1)[-1] not in ("img", "iframe", "object", "embed"), f"live <{tag}>"
        for name, value in attrs:
            assert not name.lower().startswith("on"), f"<{tag} {name}={value!r}>: an event handler"
    for attrs, code in page.scripts:
        if attrs.get("type") == "application/json":  # data: must not be able to end its element
            assert "<" not in code and ">" not in code
            json.loads(code)
        else:  # our own scripts (the page's, each flamegraph's): no user text at all
            assert "alert(" not in code
    assert "<script>alert" not in text and "<img src=x" not in text
    missing = [f for f in fields if H(f) not in page.shown]
    assert missing == [], f"not shown as text: {missing}"
    assert "XXX" not in page.shown  # template syntax in a name is printed, never run
    return page


def hostile_session(tag: str = "") -> Session:
    """Every string field that comes from the user's code or machine holds ``H(field)``."""
    t = FunctionTable()
    traced = t(H(tag + "traced function"), f"/work/{H(tag + 'traced file')}.py", 3, "traced")
    comp = t(H(tag + "compiler function"), SP + "torch/_subclasses/fake_tensor.py", 3)
    f = frame(
        "0/0", name=H(tag + "frame name"), filename=f"/work/{H(tag + 'frame file')}.py", status="failed",
        thread_name=H(tag + "thread name"), restarts=1, restart_reasons=[H(tag + "restart reason")],
        restart_details=[RestartReason(H(tag + "restart detail"), 1, f"/w/{H(tag + 'restart file')}.py", 4)],
        recompile_reason=H(tag + "recompile reason"), fail_type=H(tag + "fail type"),
        fail_reason=H(tag + "fail reason"), graph_breaks=1,
        graph_break_reasons=[GraphBreak(H(tag + "graph break"), f"/w/{H(tag + 'graph break file')}.py", 2)],
        phases={H(tag + "phase"): 0.5}, cprofile=H(tag + "cprofile path"),
        guards=GuardStats(count=3, sources={H(tag + "guard source"): 2}),
        call_site=[Location(H(tag + "call site name"), f"/w/{H(tag + 'call site file')}.py", 9)],
        properties=[PropertyTrace(H(tag + "property"), "O", "w", SP + "torch/nn/utils/parametrize.py", 1, True, 1,
                                  1, 0.5)],
    )
    s = make_session([f, frame("1/0", name=PROGRAM, start_s=2.0)], [Stack("0/0", 1, 1, [comp], [traced], 10, 0.5)],
                     t.functions)
    r = s.run
    r.target, r.command = H(tag + "target"), ["dynaprof", "run", H(tag + "command")]
    r.cwd, r.python_version, r.torch_version = H(tag + "cwd"), H(tag + "python"), H(tag + "torch")
    r.dynaprof_version, r.platform, r.hostname = H(tag + "dynaprof"), H(tag + "platform"), H(tag + "host")
    r.device, r.start_time, r.end_reason = H(tag + "device"), H(tag + "start time"), H(tag + "end reason")
    r.complete = False
    s.capture.hooks, s.capture.warnings = [H(tag + "hook")], [H(tag + "warning")]
    return s


REPORT_FIELDS = [
    "traced function", "compiler function", "frame name", "frame file", "thread name", "restart detail",
    "recompile reason", "fail type", "fail reason", "graph break", "graph break file", "phase", "cprofile path",
    "guard source", "call site name", "call site file", "property", "target", "command", "cwd", "python", "torch",
    "dynaprof", "platform", "host", "device", "start time", "end reason", "hook", "warning", "note",
]


def test_report_shows_every_hostile_field_as_text() -> None:
    ctx = RenderContext(hostile_session(), use_dot=False)
    ctx.notes.append(H("note"))  # notes quote paths and messages
    text = render_html(ctx)["report.html"]
    assert isinstance(text, str)
    page = assert_inert(text, REPORT_FIELDS)
    assert PROGRAM in page.shown
    island = next(json.loads(code) for attrs, code in page.scripts if attrs.get("id") == "dp-data")
    assert island["target"] == H("target")  # the data keeps the text verbatim


def test_compare_pages_show_every_hostile_field_as_text() -> None:
    base, new = hostile_session("base "), hostile_session("new ")
    files = render_compare(compare_sessions(base, new), base, new, names=(H("base name"), H("new name")))
    text = files["compare.html"]
    assert isinstance(text, str)
    fields = ["base name", "new name", "base target", "new target", "base start time", "new start time",
              "base torch", "new torch", "base python", "new python", "base device", "new device", "base platform",
              "new platform", "base command", "new command", "new frame name", "new frame file"]
    assert PROGRAM in assert_inert(text, fields).shown
    rows = [RankComparison(0, 1.0, 2.0, H("headline"), "rank-0"), RankComparison(1, None, 1.0, "", None)]
    index = compare_index(rows, (H("base name"), H("new name")), (1, 2))["compare.html"]
    assert isinstance(index, str)
    assert_inert(index, ["base name", "new name", "headline"])


def test_ranks_page_shows_every_hostile_field_as_text() -> None:
    one, two = hostile_session("rank "), hostile_session("rank ")
    for rank, s in enumerate((one, two)):
        s.run.rank, s.run.world_size = rank, 3
    two.frames[0].guard_count = 7  # a divergence: its message and location name the frame
    two.frames.append(frame("2/0", name=H("extra frame"), filename=f"/w/{H('extra file')}.py", start_s=3.0))
    two.run.hostname = H("other host")
    page = assert_inert(ranks_html(merge_ranks({0: one, 1: two})),
                        ["rank target", "rank host", "other host", "extra frame", "extra file"])
    assert ("a", [("href", "rank-1/report.html")]) in page.tags


# -- the environment ------------------------------------------------------------------------------


def test_environment_escapes_refuses_missing_names_and_cleans_text() -> None:
    env = environment()
    tpl = env.from_string('<p title="{{ x }}">{{ x }}</p>')
    assert tpl.render(x='<a href="x">&\'') == ('<p title="&lt;a href=&#34;x&#34;&gt;&amp;&#39;">'
                                             "&lt;a href=&#34;x&#34;&gt;&amp;&#39;</p>")
    assert tpl.render(x=Markup("<b>ok</b>")) == '<p title="<b>ok</b>"><b>ok</b></p>'  # only what we mark safe
    assert tpl.render(x="a\x00b\ud800c\x7f") == '<p title="a\ufffdb\ufffdc\ufffd">a\ufffdb\ufffdc\ufffd</p>'
    assert env.from_string("{{ x }}").render(x=PROGRAM) == PROGRAM.replace("'", "&#39;")  # printed, not run
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ missing }}").render()
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ x.missing }}").render(x=Col("c"))
    data = env.from_string("{{ d|tojson }}").render(d={"k": "</script><!--&'\u2028", "a": 1})
    assert data == '{"a": 1, "k": "\\u003c/script\\u003e\\u003c!--\\u0026\\u0027\\u2028"}'  # sorted, inert


def test_inline_svg_and_table() -> None:
    svg = inline_svg('<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "x" "http://y">\n<!-- c -->\n<svg width="1"></svg>\n')
    assert svg == '<svg width="1"></svg>' and isinstance(svg, Markup)
    t = table([Col("name"), Col("time", True)], [["<x>", ("1.0 s", 1.0)], ["y", ("?", None)]], total=5)
    html = str(environment().get_template("macros.html.j2").module.table(t))  # type: ignore[attr-defined]
    assert html == ('<div class="dp-x"><table class="dp-table sortable"><thead><tr><th>name</th><th class=n>time'
                    '</th></tr></thead><tbody><tr><td>&lt;x&gt;</td><td class="n" data-sort="1">1.0 s</td></tr><tr>'
                    '<td>y</td><td class="n">?</td></tr></tbody></table></div>'
                    '<p class="dp-note">... and 3 more rows not shown</p>')


def test_templates_are_package_data() -> None:
    """A non-editable install has the templates: pyproject's package-data covers every one."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    names = sorted(p.name for p in resources.files("dynaprof.render").joinpath("templates").iterdir()
                   if p.name.endswith(".j2"))
    assert {"page.html.j2", "macros.html.j2", "report.html.j2", "compare.html.j2", "ranks.html.j2"} <= set(names)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["dynaprof"]
    assert all(any(fnmatch(f"render/templates/{n}", g) for g in data) for n in names)
    assert any(d.split(">")[0].split("=")[0].strip() == "jinja2" for d in project["dependencies"])
