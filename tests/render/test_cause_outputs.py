"""The cause x phase outputs: the table in the terminal, Markdown and HTML; compare by cause; the
whole-pipeline user-code flamegraph."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from dynaprof import fmt
from dynaprof.analysis.cause_table import MIN_SHARE, OTHER_CAUSES, session_cause_table
from dynaprof.analysis.compare import Change, compare_sessions
from dynaprof.analysis.pruned_tree import build_pruned_tree
from dynaprof.analysis.stacks import build_tree
from dynaprof.cli.compare import explain_lines
from dynaprof.render.base import RenderContext
from dynaprof.render.colours import phase_colour
from dynaprof.render.compare_report import render_compare
from dynaprof.render.flamegraph import flamegraph_svg
from dynaprof.render.markdown import MAX_CHARS, summary_markdown
from dynaprof.render.report_html import report_html
from dynaprof.render.terminal import OTHER_PHASES, summary_text
from tests.factories import inductor_session, seed_session
from tests.helpers import read_table

HOSTILE = "<img src=x onerror=alert(1)> | *evil* `x` @here"


def _secs(text: str) -> float:
    """Inverse of ``fmt.seconds`` (``1.50 s``, ``450 ms``, ``50.0 ms``, ``789 us``)."""
    value, unit = text.split()
    return float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]


def test_table_rows_and_columns_add_up_and_small_causes_are_folded() -> None:
    s = inductor_session()
    t = session_cause_table(s)
    assert t is not None
    sampled = sum(s.axes.causes.values()) if s.axes else 0.0
    assert [r.cause for r in t.rows][:2] == ["parametrization", "forward (model.py:26)"]
    assert t.rows[-1].cause == OTHER_CAUSES and t.rows[-1].merged == 1  # unknown (0.1 s of 20 s)
    for r in t.rows:
        assert sum(r.cells.values()) == pytest.approx(r.total)
        assert r.cause == OTHER_CAUSES or r.total >= MIN_SHARE * sampled
    assert sum(r.total for r in t.rows) == pytest.approx(t.totals.total) == pytest.approx(sampled)
    for c in t.columns:
        assert sum(r.cells.get(c.key, 0.0) for r in t.rows) == pytest.approx(t.totals.cells[c.key])
    assert [c.key for c in t.columns] == ["dynamo_tracing", "fake_tensor", "guard_building", "aot_autograd", "inductor",
                                         "kernel_compile"]
    assert t.rows[0].details[0].label == "Linear.weight via Parametrization"
    assert t.restart_waste == pytest.approx(0.4)


def _terminal_table(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "by cause and phase" in line)
    rows = read_table(lines[start + 1:], "cause")
    end = next(i for i, r in enumerate(rows) if r[0] == "all causes")
    return rows[: end + 1]  # the lines under the table are not its rows


def test_terminal_table_fits_and_adds_up_within_rounding() -> None:
    text = summary_text(inductor_session(user_cause="x" * 200))
    rows = _terminal_table(text)
    # a label that wraps anyway leaves the cause column its widest (MAX_CAUSE_COLUMN): two phases
    assert rows[0] == ["cause", "Inductor", "kernels", OTHER_PHASES, "total", "%"]
    body = [r for r in rows[1:] if not r[0].startswith("Linear.weight")]  # the detail row is not a cause
    total = _secs(body[-1][-2])
    assert body[-1][0] == "all causes" and total == pytest.approx(20.15)
    causes = [r for r in body[:-1]]
    # rows add up to the total within the rounding of fmt.seconds (3 significant digits)
    assert sum(_secs(r[-2]) for r in causes) == pytest.approx(total, rel=0.01)
    assert any(r[0].startswith(OTHER_CAUSES) for r in causes)
    assert "x" * 200 in [r[0] for r in causes], "a long label is never cut"
    for line in text.splitlines():
        if "hottest" not in line and "also:" not in line and "try:" not in line:
            assert len(line) <= 100, line
    assert "restart waste: 400 ms" in text


def test_a_phase_column_beyond_the_first_two_goes_before_a_cause_label_wraps() -> None:
    label = "forward (modeling_speecht5.py): 12 more lines"  # 45 characters, a real one
    text = summary_text(inductor_session(user_cause=label), width=100)
    assert _terminal_table(text)[0] == ["cause", "Inductor", "kernels", OTHER_PHASES, "total", "%"]
    assert any(line.strip().startswith(label + " ") for line in text.splitlines())  # on one line
    # where every phase would fit beside the least cause column, but not beside the name
    text = summary_text(inductor_session(user_cause=label), width=116)
    assert OTHER_PHASES in _terminal_table(text)[0] and any(line.strip().startswith(label + " ")
                                                            for line in text.splitlines())
    # short labels keep every phase that fits, in the table's order; at 80 columns the first two
    short = _terminal_table(summary_text(inductor_session(user_cause="step (x.py:3)"), width=100))
    assert short[0] == ["cause", "tracing", "AOT", "Inductor", "kernels", OTHER_PHASES, "total", "%"]
    narrow = _terminal_table(summary_text(inductor_session(user_cause=label), width=80))
    assert narrow[0] == ["cause", "Inductor", "kernels", OTHER_PHASES, "total", "%"]


def test_markdown_and_html_tables_escape_hostile_causes() -> None:
    s = inductor_session(user_cause=HOSTILE, param_cause=HOSTILE + " via P")
    text = summary_markdown(s)
    assert len(text) < MAX_CHARS
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt; \\| \\*evil\\* \\`x\\` \\@here" in text
    assert text.index("**Verdict:**") < text.index("by cause and phase")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| cause |"))
    table = lines[start : lines.index("", start)]
    header = table[0]
    assert "Dynamo tracing" in header and "C++/Triton kernel compile" in header and "restart waste" in header
    pipes = len(re.findall(r"(?<!\\)\|", header))
    assert len(table) >= 9 and all(len(re.findall(r"(?<!\\)\|", line)) == pipes for line in table)
    page = report_html(RenderContext(s, use_dot=False))
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt; | *evil*" in page
    assert page.index("dp-verdict") < page.index('id="causes"') < page.index('id="flamegraphs"')
    assert 'id="attribution"' not in page  # one breakdown: the first-match categories are gone
    assert '<a href="#causes">' in page


def test_sessions_without_axes_show_no_table() -> None:
    for s in (seed_session(with_samples=False), seed_session()):
        if s.samples is not None:
            s.axes = None  # as loaded from a schema 1 session or a TORCH_TRACE import
        assert "by cause and phase" not in summary_text(s)
        assert "by cause and phase" not in summary_markdown(s)
        assert "dp-table dp-causes" not in report_html(RenderContext(s, use_dot=False))
        assert session_cause_table(s) is None


def test_seed_session_table_is_dynamo_only() -> None:
    t = session_cause_table(seed_session())
    assert t is not None
    assert {c.key for c in t.columns} <= {"dynamo_tracing", "fake_tensor", "guard_building", "other"}
    assert fmt.seconds(t.totals.total) == "1.20 s"


# ---------------------------------------------------------------------------------------------
# compare: by cause first, then by phase


def test_compare_names_the_cause_first_with_its_phases() -> None:
    base, new = seed_session(parametrized=False), inductor_session()
    cmp = compare_sessions(base, new)
    assert cmp.causes is not None and cmp.cause_note == ""
    assert cmp.causes["parametrization"] == Change(0.0, 14.5)
    assert cmp.cause_phases["parametrization"]["kernel_compile"] == Change(0.0, 8.0)
    head = cmp.headline
    cause = head.index("+14.5 s parametrization (73% of the growth): +8.00 s C++/Triton kernel compile, "
                       "+3.00 s Inductor codegen, +2.00 s Inductor lowering")
    assert cause < head.index("by phase: +10.0 s C++/Triton kernel compile")
    lines = explain_lines(cmp)
    assert lines[0].startswith("by cause: +14.5 s parametrization") and lines[-1].startswith("by phase: ")
    files = render_compare(cmp, base, new, names=("a", "b"))
    for name in ("compare.md", "compare.html"):
        text = str(files[name])
        assert text.index("By cause") < text.index("By phase (sampled seconds)")
        assert "+8.00 s C++/Triton kernel compile" in text


def test_compare_without_axes_says_the_cause_view_is_unavailable() -> None:
    base, new = seed_session(parametrized=False), inductor_session()
    base.axes = None
    cmp = compare_sessions(base, new)
    assert cmp.causes is None and "cause view is unavailable: BASE has no" in cmp.cause_note
    assert "by phase" not in cmp.headline and "+10.0 s C++/Triton kernel compile" in cmp.headline
    assert explain_lines(cmp)[0].startswith("the cause view is unavailable")
    files = render_compare(cmp, base, new, names=("a", "b"))
    assert "cause view is unavailable" in str(files["compare.md"]) and "By cause" not in str(files["compare.md"])


def test_compare_escapes_hostile_causes() -> None:
    base, new = seed_session(parametrized=False), inductor_session(user_cause=HOSTILE)
    files = render_compare(compare_sessions(base, new), base, new, names=("a", "b"))
    md_text, page = str(files["compare.md"]), str(files["compare.html"])
    assert "<img" not in md_text and "&lt;img src=x onerror=alert(1)&gt; \\| \\*evil\\*" in md_text
    assert "<img src" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


# ---------------------------------------------------------------------------------------------
# the whole-pipeline user-code flamegraph


def test_user_code_view_holds_every_second_on_the_cause_frames() -> None:
    s = inductor_session()
    tree = build_tree(s, "traced")
    tree.self_check()
    assert s.samples is not None and tree.seconds == pytest.approx(s.samples.seconds)
    root = tree.find("Model.forward")
    assert root is not None and root.seconds == pytest.approx(s.samples.seconds)  # all on the frame's root
    param = tree.find("Model.forward", "Linear.weight via Parametrization")
    assert param is not None and param.kind == "cause" and param.seconds == pytest.approx(13.0)
    kernel = tree.find("Model.forward", "Linear.weight via Parametrization", "[C++/Triton kernel compile]")
    assert kernel is not None and kernel.seconds == pytest.approx(8.0)
    # the backend sample still had a traced stack: it sits on its cause, not on Model.forward's line
    assert tree.find("Model.forward", "forward (model.py:26)", "[Inductor lowering]") is not None
    assert tree.find("Model.forward", "[whole graph]", "[guard building]") is not None
    traced = tree.find("Model.forward", "Linear.forward", "Linear.weight")  # Dynamo's tracing, as before
    assert traced is not None and traced.seconds == pytest.approx(1.5)
    pruned, _, _ = build_pruned_tree(s, "traced", None, 0.0)
    assert [(d, n.key, round(n.seconds, 9)) for d, n in pruned.walk()] == [
        (d, n.key, round(n.seconds, 9)) for d, n in tree.walk()]


def test_user_code_flamegraph_is_coloured_by_phase_and_escaped() -> None:
    s = inductor_session(user_cause=HOSTILE)
    svg = flamegraph_svg(s, "traced")
    ET.fromstring(svg.encode())  # well-formed: the hostile label is escaped
    assert "<img" not in svg and "&lt;img src=x onerror=alert(1)&gt;" in svg
    fills = {}
    for g in ET.fromstring(svg.encode()).iter("{http://www.w3.org/2000/svg}g"):
        title, rect = g.find("{http://www.w3.org/2000/svg}title"), g.find("{http://www.w3.org/2000/svg}rect")
        if title is not None and rect is not None:
            fills[(title.text or "").split("\n")[0]] = rect.get("fill")
    assert fills["[C++/Triton kernel compile]"] == phase_colour("kernel_compile", "[C++/Triton kernel compile]")
    assert fills["Linear.weight via Parametrization"] == phase_colour("kernel_compile",
                                                                      "Linear.weight via Parametrization")
    for label in ("C++/Triton kernel compile 50%", "Dynamo tracing 12%", "Inductor lowering"):
        assert label in svg  # the legend lists phases
    assert svg == flamegraph_svg(inductor_session(user_cause=HOSTILE), "traced")  # deterministic


# ---------------------------------------------------------------------------------------------
# one breakdown on every page: each label a reader sees stands for one number


def test_one_breakdown_on_every_page() -> None:
    """The terminal, summary.md, report.html, the PR comment and its phase bars show the cause x
    phase table's column totals under the column labels, and ``attribution`` holds the same sums."""
    from dynaprof.render.pr_pictures import COMMENT, PHASES_SVG, pr_files

    s = inductor_session()
    t = session_cause_table(s)
    assert t is not None and len(t.columns) >= 5
    for c in t.columns:
        assert s.attribution[c.key] == pytest.approx(t.totals.cells[c.key], abs=1e-6)
    want = [fmt.seconds(t.totals.cells[c.key]) for c in t.columns]
    # wide enough for every phase column (narrower terminals fold the smallest: test_terminal_width)
    term = next(line for line in summary_text(s, width=160).splitlines() if line.strip().startswith("all causes"))
    assert re.split(r"\s{2,}", term.strip())[1:-2] == want
    md_row = next(line for line in summary_markdown(s).splitlines() if line.startswith("| **all causes**"))
    assert [x.strip() for x in md_row.strip("|").split("|")][1:-3] == want  # less total, %, waste
    page = report_html(RenderContext(s, use_dot=False))
    total_row = page[page.index('<tr class=dp-total>'):]
    total_row = total_row[: total_row.index("</tr>")]
    assert re.findall(r'<td class="n">([^<]*)</td>', total_row)[: len(want)] == want
    assert 'id="attribution"' not in page and "first matching rule" not in page
    ctx = RenderContext(s, use_dot=False)
    files = pr_files(ctx)
    comment = files[COMMENT]
    assert "| **all causes** |" in comment and "first matching rule" not in comment
    bars = ET.fromstring(files[PHASES_SVG])
    tips = [el.text or "" for el in bars.iter("{http://www.w3.org/2000/svg}title")]
    for c, secs in zip(t.columns, want, strict=True):
        assert any(tip.startswith(f"{c.label}: {secs} ") for tip in tips), (c.label, tips)


def test_compare_by_phase_uses_the_table_columns() -> None:
    base, new = seed_session(parametrized=False), inductor_session()
    cmp = compare_sessions(base, new)
    labels = {c.label for c in session_cause_table(new).columns}  # type: ignore[union-attr]
    text = str(render_compare(cmp, base, new, names=("a", "b"))["compare.md"])
    block = text[text.index("By phase (sampled seconds)"):]
    block = block[: block.index("</details>")]
    rows = [line.split("|")[1].strip() for line in block.splitlines() if line.startswith("| ")][2:]  # header, rule
    assert rows and set(rows) <= labels | {"guard building", "Dynamo tracing", "other"}
    for c in session_cause_table(new).columns:  # type: ignore[union-attr]
        if c.label in rows:
            assert cmp.categories[c.key].new == pytest.approx(new.attribution[c.key])
