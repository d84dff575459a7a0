"""One row cap per table (issue 50): each table has one named default, every output takes it from
there, and ``--max-rows`` (``RenderOptions.max_rows``) moves it in every output. A renderer that
kept a literal of its own, or ignored the option, fails here."""

from __future__ import annotations

import re

import pytest

from dynaprof.analysis.cause_table import CAUSE_ROWS, cause_rows, screen_cause_rows
from dynaprof.analysis.compare import compare_sessions
from dynaprof.model.session import Session
from dynaprof.render.base import TABLE_ROWS, RenderContext, RenderOptions, page_rows
from dynaprof.render.compare_report import compare_markdown, compare_view
from dynaprof.render.markdown import summary_markdown
from dynaprof.render.report_html import report_view
from dynaprof.render.terminal import summary_text
from tests.helpers import big_session

#: a cause row of ``big_session``: one per traced function, each over 1% of the compile
CAUSE = re.compile(r"user\\?_fn\\?_\d+ \(module\\?_\d+\.py")


@pytest.fixture(scope="module")
def session() -> Session:
    return big_session(90)  # 90 frames and causes (each over 1%): more than any cap below


def _terminal_causes(text: str) -> list[str]:
    """The cause rows of the terminal's table (its detail lines are indented further)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "by cause and phase" in line) + 2  # the header
    end = next(i for i in range(start, len(lines)) if lines[i].strip().startswith("all causes"))
    return [line for line in lines[start:end] if line.startswith("    ") and not line.startswith("      ")]


def _markdown_causes(text: str) -> list[str]:
    section = text[text.index("Where compile time went"):text.index("| **all causes**")]
    return [row for row in section.splitlines() if row.startswith("| ") and not row.startswith("| ↳")
            and not row.startswith("| cause") and not row.startswith("| ---") and not row.startswith("|---")]


def _html_causes(session: Session, options: RenderOptions) -> list[str]:
    causes = report_view(RenderContext(session, options)).causes
    assert causes is not None
    return [r.label for r in causes.rows if r.cls == ""]


def test_the_cause_table_has_one_default_and_the_terminal_a_rule_from_it() -> None:
    assert cause_rows(TABLE_ROWS) == CAUSE_ROWS == 12
    assert screen_cause_rows(TABLE_ROWS) == 8  # the first screen: two thirds of it, as docs/reports.md shows
    assert cause_rows(5) == 5 and screen_cause_rows(5) == 3 and screen_cause_rows(1) == cause_rows(1) == 1


@pytest.mark.parametrize("max_rows", [TABLE_ROWS, 6, 2])
def test_every_output_s_cause_table_follows_max_rows(session: Session, max_rows: int) -> None:
    options = RenderOptions(max_rows=max_rows)
    term = _terminal_causes(summary_text(session, max_rows, width=160))
    md = _markdown_causes(summary_markdown(session, max_rows))
    html = _html_causes(session, options)
    assert len(term) == screen_cause_rows(max_rows), term
    assert len(md) == cause_rows(max_rows), md
    assert len(html) == cause_rows(max_rows), html
    # the same rows, in the same order: one table, three layouts
    assert [CAUSE.search(r) is not None for r in md] == [CAUSE.search(r) is not None for r in html]


@pytest.mark.parametrize("max_rows", [TABLE_ROWS, 7])
def test_the_frames_tables_follow_max_rows(session: Session, max_rows: int) -> None:
    more = len(session.frames) - max_rows
    assert f"... and {more} more frames" in summary_text(session, max_rows, width=1000)
    assert f"{more:,} more frames" in summary_markdown(session, max_rows)


def test_report_html_s_sortable_tables_follow_max_rows(session: Session) -> None:
    assert page_rows(TABLE_ROWS) == 2000  # every row of any real run
    full = report_view(RenderContext(session, RenderOptions()))
    assert full.frames is not None and len(full.frames.rows) == len(session.frames)
    one = report_view(RenderContext(session, RenderOptions(max_rows=1)))
    assert page_rows(1) < len(session.frames)
    assert one.frames is not None and len(one.frames.rows) == page_rows(1) and one.frames.more
    assert one.properties is not None and len(one.properties.rows) == page_rows(1)
    assert one.traced is not None and len(one.traced.rows) < len(full.traced.rows if full.traced else [])
    # the per-compile sections: a tenth of the page's rows
    assert full.compiles is not None and len(full.compiles.frames) == len(session.frames)
    assert one.compiles is not None and len(one.compiles.frames) == page_rows(1) // 10 and one.compiles.more


def test_compare_follows_max_rows(session: Session) -> None:
    new = big_session(90)
    for f in new.frames:
        f.compile_time_s = 2 * (f.compile_time_s or 0.0)
    cmp = compare_sessions(session, new)
    md = compare_markdown(cmp, session, new, ("a", "b"), [], 4)
    assert re.search(r"86 more frames", md), md[-3000:]
    view = compare_view(cmp, session, new, {}, 1)
    assert view.frames is not None and len(view.frames[1].rows) == page_rows(1)
