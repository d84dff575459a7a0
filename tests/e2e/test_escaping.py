"""Names and paths from user code are data in every output: one real run with hostile names.

A script whose code objects, module class, thread name, graph-break message and own path carry
markup, quotes, pipes, backticks, newlines and terminal escape sequences is profiled once (with
``--cprofile``, so the call graph comes from cProfile data); every file of the run folder is
then checked by its format's own rules: SVG and HTML parse and show the names as text (never as
live markup), DOT keeps them inside quoted strings and Graphviz accepts it, Markdown tables stay
well formed, JSON parses, and the terminal summary holds no control characters.
"""

from __future__ import annotations

import html.parser
import json
import os
import pstats
import re
import shutil
import subprocess
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dynaprof.model import Session, load_session
from tests.conftest import CliResult, profile
from tests.helpers import playwright, torch_release
from tests.helpers import tables as markdown_tables

pytestmark = pytest.mark.torch

EVIL = '<img src=x onerror="alert(1)">&</svg><script>x</script>'
#: table pipe, code backticks, folded-stack separator, newline, CSI colour, CR, BEL, RTL override, C1 CSI
PIPE = "pipe|name`tick`;semi\nline2\x1b[31mred\rcr\x07bel\u202ertl\x9bcsi"
EVIL_CLASS = 'Evil<b>"&'
THREAD = EVIL + "\x1b[31m"
LIVE_MARKUP = ("<script>x</script>", "<img src=x", '<b>"&')
#: a function named in template syntax: the HTML pages are Jinja2 templates, and must print it as is
TEMPLATE = "{{ 7*7 }}{% raw %}{{ config }}"

SCRIPT = f"""
import inspect, threading, time
import torch
import torch.nn as nn
from torch.nn.utils import parametrize

EVIL = {EVIL!r}
PIPE = {PIPE!r}
TEMPLATE = {TEMPLATE!r}


def rename(fn, name):
    fn.__code__ = fn.__code__.replace(co_name=name, co_qualname=name)
    return fn


def helper(x):
    return x * 3


rename(helper, EVIL + "_inlined")


def f(x):
    return helper(x.sin()) + 1


rename(f, EVIL)


# torch 2.4's graph_break() takes no message
HAS_MSG = "msg" in inspect.signature(torch._dynamo.graph_break).parameters
BREAK = dict(msg="user says " + EVIL + " | " + PIPE) if HAS_MSG else {{}}


def g(x):
    y = x.cos()
    torch._dynamo.graph_break(**BREAK)
    return y * 2


rename(g, PIPE)


def h(x):
    return x.tanh()


rename(h, TEMPLATE)


def backend(gm, inputs):  # runs inside the compile: cProfile and the sampler see its name
    t = time.perf_counter()
    while time.perf_counter() - t < 0.05:
        pass
    return gm.forward


rename(backend, EVIL + "_backend")


class Double(nn.Module):
    def forward(self, w):
        return w * 2


Evil = type({EVIL_CLASS!r}, (nn.Linear,), {{}})
m = Evil(4, 4)
parametrize.register_parametrization(m, "weight", Double())

x = torch.ones(4)
torch.compile(f, backend="eager")(x)
torch.compile(g, backend="eager")(x)
torch.compile(h, backend="eager")(x)
torch.compile(m, backend="eager")(x)
torch.compile(lambda x: x.tan(), backend=backend)(x)
t = threading.Thread(target=lambda: torch.compile(lambda x: x.exp(), backend="eager")(x), name={THREAD!r})
t.start()
t.join()
print("done")
"""


def _hostile_dir(tmp: Path) -> Path:
    """A folder whose name has quotes, '&', spaces and, where the filesystem allows, a newline
    (Linux does, and Python runs scripts from such a path without trouble)."""
    for name in ("we\"ird & 'q' \n dir", "we\"ird & 'q' dir"):
        try:
            (tmp / name).mkdir()
            return tmp / name
        except OSError:
            continue
    raise AssertionError("cannot create a folder with quotes and '&' in its name")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CliResult:
    tmp = tmp_path_factory.mktemp("escaping")
    folder = _hostile_dir(tmp)
    script = folder / 'evil "s" & x.py'
    script.write_text(SCRIPT)
    result = profile(tmp, [str(script.relative_to(tmp))], "--cprofile", "--graph-nodes", "400", timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    return result


@pytest.fixture(scope="module")
def session(run: CliResult) -> Session:
    return load_session(run.run_dir)


def _files(run: CliResult, *suffixes: str) -> list[Path]:
    return sorted(p for p in run.run_dir.rglob("*") if p.is_file() and p.name.endswith(suffixes))


def test_session_keeps_the_hostile_names_verbatim(session: Session) -> None:
    names = {f.name for f in session.frames}
    assert EVIL in names and PIPE in names and TEMPLATE in names
    assert any(PIPE in n and n.startswith("torch_dynamo_resume_in_") for n in names)
    assert any(f.filename.endswith('dir/evil "s" & x.py') for f in session.frames)
    assert {f.thread_name for f in session.frames} >= {"MainThread", THREAD}
    reasons = [gb.reason for f in session.frames for gb in f.graph_break_reasons]
    assert reasons
    if torch_release() >= (2, 5):  # torch 2.4: no graph_break(msg=...), no property traces
        assert any("user says " + EVIL in r for r in reasons), reasons
        labels = {p.label for f in session.frames for p in f.properties}
        assert f"{EVIL_CLASS}.weight" in labels
    fnames = {fn.name for fn in session.functions}
    assert EVIL + "_inlined" in fnames  # traced stacks hold the inlined helper
    assert session.capture.cprofile and session.artifacts.get("cprofile")


# -- every file is checked by the rules of its format ------------------------------------------


def _check_text_has_no_live_markup(path: Path, text: str) -> None:
    for bad in LIVE_MARKUP:
        assert bad not in text, f"{path.name}: raw {bad!r}"


class _Html(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.open_scripts = 0
        self.script_data: list[str] = []
        self.text: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        if tag in ("script", "style"):
            self._in.append(tag)
            self.open_scripts += tag == "script"

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "script":
            self.script_data.append(data)
        elif not self._in:
            self.text.append(data)


def _no_live_elements(where: str, tags: list[tuple[str, list[tuple[str, str | None]]]]) -> None:
    for tag, attrs in tags:
        local = tag.rsplit("}", 1)[-1].lower()
        assert local not in ("img", "iframe", "object", "embed"), f"{where}: live <{local}> element"
        for name, _ in attrs:
            local_attr = name.rsplit("}", 1)[-1].lower()
            assert local_attr != "onerror", f"{where}: live onerror= attribute on <{local}>"


def _check_html(path: Path) -> None:
    raw = path.read_text(encoding="utf-8")
    _check_text_has_no_live_markup(path, raw)
    p = _Html()
    p.feed(raw)
    p.close()
    _no_live_elements(path.name, p.tags)
    for data in p.script_data:  # a raw "</script>" in embedded data would end the block early
        assert "<img" not in data and "<script" not in data and "</svg" not in data, path.name
    text = "".join(p.text)
    assert EVIL in text, f"{path.name}: the hostile frame name is not shown as text"
    assert f"{EVIL_CLASS}.weight" in text or torch_release() < (2, 5)  # 2.4 traces no property
    assert "&lt;img src=x" in raw
    if path.name == "report.html":  # the frames table names every compile: template syntax printed, not run
        assert TEMPLATE in text


def _check_svg(path: Path) -> None:
    raw = path.read_text(encoding="utf-8")
    _check_text_has_no_live_markup(path, raw)
    root = ET.fromstring(raw.encode("utf-8"))  # well formed XML, or ParseError
    tags: list[tuple[str, list[tuple[str, str | None]]]] = [(el.tag, list(el.attrib.items())) for el in root.iter()]
    _no_live_elements(path.name, tags)
    for el in root.iter():
        if el.tag.rsplit("}", 1)[-1] == "script":
            assert "alert(1)" not in (el.text or ""), f"{path.name}: the name ended up inside a <script>"


def _svg_text(raw: str) -> str:
    root = ET.fromstring(raw.encode("utf-8"))
    return "".join(root.itertext()) + "".join(v for el in root.iter() for v in el.attrib.values())


_DOT_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def _dot_outside_strings(dot: str) -> str:
    """The DOT text with every (properly escaped) quoted string removed; an unterminated
    string leaves its opening quote behind."""
    return _DOT_STRING.sub('""', dot)


def _check_dot(path: Path) -> None:
    dot = path.read_text(encoding="utf-8")
    outside = _dot_outside_strings(dot)
    assert outside.count('"') % 2 == 0, f"{path.name}: an unterminated quoted string"
    for marker in ("<img", "<script", "onerror", "alert(1)", "<b>", 'we"ird', "pipe|"):
        assert marker not in outside, f"{path.name}: {marker!r} outside a quoted string"
    assert "\n" not in "".join(m.group(0) for m in _DOT_STRING.finditer(dot)), "raw newline in a DOT string"
    if shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed")
    proc = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "syntax error" not in proc.stderr
    text = _svg_text(proc.stdout)
    assert EVIL + "_backend" in text, "Graphviz did not show the hostile name as text"
    _check_text_has_no_live_markup(path, proc.stdout)


def _md_cells(line: str) -> int:
    """Cell separators in a Markdown table row: '|' not escaped by a backslash, outside code."""
    n, i, in_code = 0, 0, False
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            in_code = not in_code
        elif c == "|" and not in_code:
            n += 1
        i += 1
    return n


def _check_markdown(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    outside_fences, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            outside_fences.append(line)
    body = "\n".join(outside_fences)
    for bad in ("<img", "<script", "<b>", "</svg"):
        assert bad not in body, f"{path.name}: raw {bad!r} outside a code block"
    assert "&lt;img src=x" in body, f"{path.name}: the hostile name is not shown"
    tables = markdown_tables(body)
    assert tables
    for table in tables:
        widths = {_md_cells(row) for row in table}
        assert len(widths) == 1, f"{path.name}: table rows have different cell counts: {table}"
    assert any("pipe\\|name\\`tick\\`" in row for table in tables for row in table)


def _strict_json(path: Path) -> Any:
    def no_nan(name: str) -> Any:
        raise AssertionError(f"{path.name}: {name} is not JSON")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_nan)


def _check_json(path: Path) -> None:
    data = _strict_json(path)
    assert "<img src=x" in json.dumps(data, ensure_ascii=False) or path.name != "speedscope.json"


def _check_folded(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for line in text.splitlines():
        assert re.fullmatch(r".+ \d+", line), f"{path.name}: malformed line {line!r}"
        assert "\r" not in line


def _check_gz(path: Path) -> None:
    """A compressed export (``--exports gzip``, the default): the text inside passes its own check."""
    import gzip
    import tempfile

    inner = path.name.removesuffix(".gz")
    with tempfile.TemporaryDirectory() as d:
        plain = Path(d) / inner
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        CHECKERS[plain.suffix](plain)


def _check_summary_txt(path: Path) -> None:
    _assert_no_control_chars(path.name, path.read_text(encoding="utf-8"))


def _check_prof(path: Path) -> None:
    pstats.Stats(str(path))


CHECKERS: dict[str, Callable[[Path], None]] = {
    ".svg": _check_svg,
    ".html": _check_html,
    ".dot": _check_dot,
    ".md": _check_markdown,
    ".json": _check_json,
    ".folded": _check_folded,
    ".gz": _check_gz,
    ".txt": _check_summary_txt,
    ".prof": _check_prof,
}


def test_every_output_file_has_a_format_check(run: CliResult) -> None:
    files = [p for p in run.run_dir.rglob("*") if p.is_file()]
    unchecked = [str(p.relative_to(run.run_dir)) for p in files if p.suffix not in CHECKERS]
    assert unchecked == [], "new output formats need an escaping check here"
    assert {p.suffix for p in files} >= {".svg", ".html", ".dot", ".md", ".json", ".gz", ".txt", ".prof"}


@pytest.mark.parametrize("suffix", [".svg", ".html", ".json", ".gz", ".txt", ".prof"])
def test_outputs_are_well_formed_and_inert(run: CliResult, suffix: str) -> None:
    files = _files(run, suffix)
    assert files
    for path in files:
        CHECKERS[suffix](path)


def test_svgs_show_the_names_as_text(run: CliResult) -> None:
    traced = (run.run_dir / "flame-traced.svg").read_text(encoding="utf-8")
    assert EVIL in _svg_text(traced)
    assert "&lt;img src=x" in traced
    if shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed: no callgraph.svg to check")
    graph = (run.run_dir / "callgraph.svg").read_text(encoding="utf-8")
    assert EVIL + "_backend" in _svg_text(graph)  # from cProfile data


def test_dot_keeps_names_in_quoted_strings_and_graphviz_accepts_it(run: CliResult) -> None:
    dot = run.run_dir / "callgraph.dot"
    assert EVIL.replace('"', '\\"').split("&")[0] in dot.read_text(encoding="utf-8")
    _check_dot(dot)


def test_markdown_tables_stay_well_formed(run: CliResult) -> None:
    for path in _files(run, ".md"):
        _check_markdown(path)


def _assert_no_control_chars(where: str, text: str) -> None:
    bad = sorted({c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")})
    assert bad == [], f"{where}: control characters {bad!r}"


def test_terminal_summary_has_no_control_characters(run: CliResult) -> None:
    _assert_no_control_chars("stderr", run.stderr)
    _assert_no_control_chars("summary.txt", (run.run_dir / "summary.txt").read_text(encoding="utf-8"))
    from dynaprof.render.terminal import summary_text

    session = load_session(run.run_dir)
    at_100 = summary_text(session, 25, width=100)  # the table cell as cut at a width this test sets
    _assert_no_control_chars("summary at 100 columns", at_100)
    assert "pipe|name`tick`;semi" in at_100  # shown, cut to its cell
    wide = summary_text(session, 25, width=1000)
    _assert_no_control_chars("wide summary", wide)
    assert "pipe|name`tick`;semi line2?[31mred cr?bel?rtl?csi" in wide
    assert EVIL in wide  # markup is harmless on a terminal: shown as is


def test_progress_lines_keep_a_hostile_path_on_one_line(run: CliResult, session: Session) -> None:
    if "\n" not in session.run.target:
        pytest.skip("this filesystem refused a newline in a folder name")
    assert not any(line.startswith(" dir/") for line in run.stderr.splitlines())


def test_markdown_has_no_control_characters(run: CliResult) -> None:
    _assert_no_control_chars("summary.md", (run.run_dir / "summary.md").read_text(encoding="utf-8"))


@pytest.mark.browser
def test_report_and_flamegraphs_stay_inert_in_a_browser(run: CliResult) -> None:
    """The pages' own scripts (tooltips, search, zoom) must not turn names into markup either."""
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    from tests.helpers import CHROMIUM
    from tests.helpers import CHROMIUM_ARGS as ARGS

    if not (os.access(CHROMIUM, os.X_OK) or shutil.which(CHROMIUM)):
        pytest.skip(f"chromium not found at {CHROMIUM}")
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:  # an alert() would mean injected markup ran
        dialogs.append(dialog.message)
        dialog.dismiss()

    with playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            for name in ("report.html", "flame-traced.svg", "flame-compiler.svg"):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.on("dialog", on_dialog)
                page.goto((run.run_dir / name).as_uri())
                page.wait_for_load_state("load")
                frames = page.locator("svg.dynaprof-flame .fg-panel > g", has=page.locator("title", has_text="onerror"))
                if name == "flame-traced.svg":
                    assert frames.count() > 0
                for i in range(min(frames.count(), 20)):  # hover shows details, click zooms
                    g = frames.nth(i)
                    if g.is_visible():
                        g.hover(timeout=2000)
                        g.click(timeout=2000)
                if name == "report.html":
                    page.locator("button[data-expand=open]").click()
                assert page.locator("img").count() == 0, name
                assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0, name
                page.close()
        finally:
            browser.close()
    assert dialogs == []
