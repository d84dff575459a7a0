"""summary.md: well-formed GFM tables, the size cap, and escaping of hostile user text."""

from __future__ import annotations

import re

import pytest

from dynaprof.model import GraphBreak, PropertyTrace, Stack
from dynaprof.render.base import RenderContext, RenderOptions
from dynaprof.render.markdown import MAX_CHARS, md_code_block, md_escape, render_markdown, summary_markdown
from tests.factories import SP, FunctionTable, frame, make_session, seed_session
from tests.helpers import CELL_SPLIT, assert_tables_well_formed, big_session

HOSTILE = "<img src=x onerror=alert(1)>|`rm -rf`\n**bold** [link](http://x) @here $x$"


def test_escape_hostile_text() -> None:
    out = md_escape(HOSTILE, None)
    assert "<" not in out and ">" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "\n" not in out
    assert not CELL_SPLIT.search(out)  # every pipe escaped
    assert "\\`rm -rf\\`" in out
    assert "\\*\\*bold\\*\\*" in out and "\\[link\\]" in out and "\\@here" in out and "\\$x\\$" in out


@pytest.mark.parametrize(("text", "expected"), [
    ("- item", "\\- item"), ("1. item", "1\\. item"), ("2.13.0", "2.13.0"), ("a_b", "a\\_b"),
    ("x & y", "x &amp; y"), ("a\r\nb\tc", "a b c"), ("", ""),
])
def test_escape_cases(text: str, expected: str) -> None:
    assert md_escape(text) == expected


def test_escape_limits_length() -> None:
    assert len(md_escape("a" * 1000, 50)) == 50


def test_code_block_fence_longer_than_content() -> None:
    block = md_code_block("echo ```x``` ````")
    assert block.startswith("`````\n") and block.endswith("\n`````")


def test_seed_summary() -> None:
    text = str(render_markdown(RenderContext(seed_session()))["summary.md"])
    assert text.startswith("### dynaprof: repro.py")
    assert "**Verdict:** parametrization (64 properties via Parametrization" in text
    assert "2,639 guards" in text
    for link in ("(flame-compiler.svg)", "(flame-traced.svg)", "(callgraph.svg)", "(report.html)", "(trace.json)"):
        assert link in text
    assert "| 0/0 | forward (repro.py:11) | 1.20 s | ? | 0 | 0 | 2,639 |" in text  # calls: ? (not counted here)
    assert "| parametrization | 840 ms |   |   | 840 ms | 70% |" in text  # the one breakdown: cause x phase
    assert "Samples beyond" not in text  # none were
    assert "| Linear.weight | 32 | 32 | 470 ms |" in text
    assert "| Parametrization.forward | repro.py:30 | 840 ms | 840 ms |" in text
    assert "builtin at 950 Hz (requested 1,000 Hz)" in text
    assert "```sh\ndynaprof run repro.py\n```" in text
    assert text.count("<details") == text.count("</details>")
    assert assert_tables_well_formed(text) >= 5


def test_no_samples_no_flame_links() -> None:
    text = summary_markdown(seed_session(with_samples=False))
    assert "flame-compiler.svg" not in text and "report.html" in text
    assert "attribution" not in text
    assert_tables_well_formed(text, 3)


def test_no_frames() -> None:
    text = summary_markdown(make_session([]))
    assert "no torch.compile compilation happened" in text
    assert_tables_well_formed(text, 1)


def test_hostile_names_are_inert() -> None:
    t = FunctionTable()
    fn = t(HOSTILE, "/work/<evil>.py", 3, "traced")
    f = frame("0/0", name=HOSTILE, filename="/work/x|y`.py", restarts=1, restart_reasons=[HOSTILE],
              graph_breaks=1, graph_break_reasons=[GraphBreak(HOSTILE, "/w/<b>.py", 2)],
              properties=[PropertyTrace(HOSTILE, "O", "w", SP + "torch/nn/utils/parametrize.py", 1, True, 1, 1, 0.5)])
    s = make_session([f], [Stack("0/0", 1, 1, [], [fn], 1, 0.5)], t.functions)
    s.run.target = HOSTILE
    s.capture.warnings = [HOSTILE]
    text = summary_markdown(s)
    assert "<img" not in text and "<evil>" not in text and "<b>" not in text
    assert not re.search(r"(?<!\\)\]\(http", text)  # no live link
    assert_tables_well_formed(text, 6)
    # the only raw HTML is our own <details>/<summary>
    assert set(re.findall(r"</?([a-zA-Z]+)", text)) <= {"details", "summary"}


def test_size_cap_on_5000_frames() -> None:
    s = big_session(5000)
    text = str(render_markdown(RenderContext(s))["summary.md"])
    assert len(text) < MAX_CHARS
    assert "... and 4,975 more frames" in text
    assert "more functions" in text and "more reasons" in text and "more properties" in text
    assert_tables_well_formed(text, 6)


def test_size_cap_shrinks_rows_then_sections() -> None:
    s = big_session(300)
    text = summary_markdown(s, max_rows=1000)
    assert len(text) < MAX_CHARS
    assert_tables_well_formed(text, 6)
    tiny = summary_markdown(s, max_rows=25, max_chars=4000)
    assert len(tiny) < 4000
    assert "summary shortened" in tiny
    assert tiny.count("<details") == tiny.count("</details>")


def test_max_rows_option() -> None:
    text = str(render_markdown(RenderContext(big_session(50), RenderOptions(max_rows=5)))["summary.md"])
    assert "... and 45 more frames" in text
