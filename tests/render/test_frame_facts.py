"""A per-compile fact is declared once (``render.report_facts.FRAME_FACTS``) and every frames table
shows it in the same words and numbers: this follows a new one, made of a real ``CompiledFrame``
field, into the terminal, ``summary.md`` and ``report.html`` (the recipe: ``docs/architecture.md``)."""

from __future__ import annotations

import pytest

from dynaprof.model.session import Session
from dynaprof.render import report_facts
from dynaprof.render.base import RenderContext, RenderOptions
from dynaprof.render.markdown import summary_markdown
from dynaprof.render.report_facts import EVERY_OUTPUT, FRAME_FACTS, FrameFact
from dynaprof.render.report_html import report_html, report_view
from dynaprof.render.terminal import summary_text
from tests.factories import seed_session

#: a fact no frames table shows today: the FX graph's node count, <b> in the header to see it escaped
NODES = FrameFact("graph_nodes", "graph <b>nodes</b>", "nodes<b>", lambda f: f.graph_node_count, outputs=EVERY_OUTPUT)


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> Session:
    monkeypatch.setattr(report_facts, "FRAME_FACTS", (*FRAME_FACTS, NODES))
    s = seed_session()
    for i, f in enumerate(s.frames):
        f.graph_node_count = 12_340 + i
    return s


def test_a_new_frame_fact_reaches_every_output(session: Session) -> None:
    term = summary_text(session, width=1000)
    md = summary_markdown(session)
    view = report_view(RenderContext(session, RenderOptions()))
    page = report_html(RenderContext(session, RenderOptions()))
    assert "nodes<b>" in term and "12,340" in term  # the terminal's short header; no markup there
    header = next(line for line in md.splitlines() if line.startswith("| compile id"))
    assert header.endswith("| graph &lt;b&gt;nodes&lt;/b&gt; |") and "| 12,340 |" in md
    assert view.frames is not None and [c.label for c in view.frames.cols][-1] == "graph <b>nodes</b>"
    assert any("12,340" in tuple(row[-1]) and "12340" in tuple(row[-1]) for row in view.frames.rows)  # text, sort key
    assert "graph &lt;b&gt;nodes&lt;/b&gt;" in page and "graph <b>nodes" not in page


def test_a_fact_shows_only_where_it_is_declared() -> None:
    s = seed_session()
    md, term = summary_markdown(s), summary_text(s, width=1000)
    html = report_view(RenderContext(s, RenderOptions()))
    assert html.frames is not None
    for fact in FRAME_FACTS:
        if fact.optional:
            continue
        assert (f"| {fact.header} |" in md) == (report_facts.MARKDOWN in fact.outputs), fact.key
        assert (fact.short in term.split("\n\n")[1]) == (report_facts.TERMINAL in fact.outputs), fact.key
        assert (fact.header in [c.label for c in html.frames.cols]) == (report_facts.HTML in fact.outputs), fact.key


def test_inductor_s_two_kernel_counts_are_told_apart_where_a_compile_has_them() -> None:
    """Every body generated (summary.md and report.html) and each kernel once, what builds cost (the
    terminal too); a session without Inductor shows neither."""
    s = seed_session()
    plain = (summary_text(s, width=1000), summary_markdown(s))
    assert "kernels defined" not in plain[1] and " kernels" not in plain[0].split("\n\n")[1]
    s.frames[0].inductor_kernels, s.frames[0].kernels_defined = 64, 1
    term, md = summary_text(s, width=1000), summary_markdown(s)
    header = next(line for line in md.splitlines() if line.startswith("| compile id"))
    assert header.endswith("| kernels generated | kernels defined |") and "| 64 | 1 |" in md
    table = term.split("\n\n")[1].splitlines()
    assert table[0].split()[-1] == "kernels" and table[1].split()[-1] == "1" and "generated" not in term
    view = report_view(RenderContext(s, RenderOptions()))
    assert view.frames is not None
    labels = [c.label for c in view.frames.cols]
    at = labels.index("kernels generated")
    assert labels[at + 1] == "kernels defined"
    assert [cell[1] for cell in view.frames.rows[0][at : at + 2]] == ["64", "1"]  # (kind, text, sort key, ...)
