"""``%load_ext dynaprof``, ``%%dynaprof`` and ``%dynaprof``, driven through IPython's InteractiveShell."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from dynaprof.notebook import flame_html, split_line

IPython = pytest.importorskip("IPython")
torch = pytest.importorskip("torch")


class Shell:
    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.shown: list[dict[str, str]] = []
        shell.display_pub.publish = lambda data, *a, **k: self.shown.append(data)

    def run(self, source: str) -> Any:
        self.shown.clear()
        return self.shell.run_cell(source, store_history=False)

    @property
    def ns(self) -> dict[str, Any]:
        ns: dict[str, Any] = self.shell.user_ns
        return ns


@pytest.fixture
def ip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Shell]:
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.chdir(tmp_path)
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False  # no history thread left running after the test
    shell = InteractiveShell.instance(config=config)
    shell.run_line_magic("load_ext", "dynaprof")
    wrapped = Shell(shell)
    torch._dynamo.reset()
    wrapped.run("import torch\ndef f(x):\n    return torch.sin(x) * 2 + 1\ncf = torch.compile(f, backend='eager')")
    try:
        yield wrapped
    finally:
        shell.run_line_magic("unload_ext", "dynaprof")
        InteractiveShell.clear_instance()


def _session(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "session.json").read_text(encoding="utf-8"))
    return data


class _Iframes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.srcdocs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "iframe":
            self.srcdocs.append(dict(attrs).get("srcdoc") or "")


def test_cell_magic_profiles_the_cell_and_shows_summary_and_flamegraph(ip: Shell, tmp_path: Path) -> None:
    res = ip.run("%%dynaprof -o nb\nx = torch.randn(4)\ny = cf(x)\nz = 1")
    assert res.success
    assert ip.ns["z"] == 1 and torch.equal(ip.ns["y"], torch.sin(ip.ns["x"]) * 2 + 1)  # the cell ran as usual
    [shown] = [d for d in ip.shown if "text/html" in d]
    assert "f (<ipython-input-" in shown["text/plain"] and "1 compiled frame" in shown["text/plain"]
    parser = _Iframes()
    parser.feed(shown["text/html"])
    [doc] = parser.srcdocs  # the flamegraph, in its own document so its script runs there
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in doc and 'class="dynaprof-flame"' in doc and "<script" in doc
    assert "dynaprof: wrote" in shown["text/html"]
    run = tmp_path / "nb"
    s = _session(run)
    assert [f["name"] for f in s["frames"]] == ["f"] and s["run"]["target"] == "<notebook cell>"
    assert s["run"]["command"] == [] and s["run"]["exit_status"] is None
    assert (run / "report.html").is_file() and (run / "flame-traced.svg").is_file()
    assert ip.ns["_dynaprof"].session.frames[0].name == "f"


def test_rerunning_the_cell_replaces_the_earlier_run(ip: Shell, tmp_path: Path) -> None:
    ip.run("%%dynaprof -o nb\ncf(torch.randn(4))")
    first = _session(tmp_path / "nb")["frames"][0]["key"]
    (tmp_path / "nb" / "notes.txt").write_text("mine")
    (tmp_path / "nb" / "flames").mkdir(exist_ok=True)
    (tmp_path / "nb" / "flames" / "stale.svg").write_text("<svg/>")
    res = ip.run("%%dynaprof -o nb\ncf(torch.randn(4, 4))")
    assert res.success
    frames = _session(tmp_path / "nb")["frames"]
    assert len(frames) == 1 and frames[0]["key"] != first  # only the new run's compile
    assert not (tmp_path / "nb" / "flames" / "stale.svg").exists()  # the earlier run's files are gone
    assert (tmp_path / "nb" / "notes.txt").read_text() == "mine"  # what is not a run's is kept


def test_line_magic_profiles_one_statement(ip: Shell, tmp_path: Path) -> None:
    res = ip.run("%dynaprof -o line --no-flame y = cf(torch.randn(3, 3, 3))")
    assert res.success and tuple(ip.ns["y"].shape) == (3, 3, 3)
    assert [f["name"] for f in _session(tmp_path / "line")["frames"]] == ["f"]
    [shown] = [d for d in ip.shown if "text/html" in d]
    assert "<iframe" not in shown["text/html"] and "1 compiled frame" in shown["text/plain"]


def test_an_exception_in_the_cell_is_shown_and_the_profile_saved(ip: Shell, tmp_path: Path) -> None:
    res = ip.run("%%dynaprof -o err\ncf(torch.randn(2))\nraise KeyError('nope')")
    assert isinstance(res.error_in_exec, KeyError)  # the cell's own error, as without the magic
    s = _session(tmp_path / "err")
    assert s["run"]["end_reason"] == "exception" and len(s["frames"]) == 1


def test_bad_options_are_one_line_usage_errors(ip: Shell, tmp_path: Path) -> None:
    from IPython.core.error import UsageError

    for source in ("%%dynaprof --rate 0 -o bad\n1", "%%dynaprof --bogus -o bad\n1", "%dynaprof -o bad"):
        res = ip.run(source)
        assert isinstance(res.error_in_exec, UsageError), source
        assert "\n" not in str(res.error_in_exec)
    assert not (tmp_path / "bad").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    res = ip.run("%%dynaprof -o full\n1")
    assert isinstance(res.error_in_exec, UsageError) and "pass --force" in str(res.error_in_exec)


def test_split_line_separates_options_from_the_statement() -> None:
    assert split_line("-o 'my dir' --rate 500 y = f(x, '-o')") == (["-o", "my dir", "--rate", "500"], "y = f(x, '-o')")
    assert split_line("--no-flame -- -x") == (["--no-flame"], "-x")
    assert split_line("model(x)") == ([], "model(x)")


def test_flame_html_keeps_the_svg_intact_and_escaped() -> None:
    svg = '<svg height="120" width="10"><title>a "b" &amp; <c></title><script>x()</script></svg>'
    out = flame_html(svg)
    assert out.startswith("<iframe") and 'sandbox="allow-scripts"' in out and "height:128px" in out
    parser = _Iframes()
    parser.feed(out)
    assert len(parser.srcdocs) == 1 and svg in parser.srcdocs[0]  # unescaped by the browser: the SVG as written
    assert "<svg" not in out and "<script" not in out  # nothing of it is live in the notebook page itself


def test_cell_magic_records_calls_and_times_them_on_request(ip: Shell, tmp_path: Path) -> None:
    res = ip.run("%%dynaprof -o timed --no-flame --time-calls\nfor _ in range(3):\n    y = cf(torch.randn(2, 2, 2))\n")
    assert res.success and tuple(ip.ns["y"].shape) == (2, 2, 2)
    [frame] = _session(tmp_path / "timed")["frames"]
    assert frame["calls"] == 3 and frame["call_time_median_s"] > 0

