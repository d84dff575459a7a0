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
