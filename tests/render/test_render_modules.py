"""Where the report code lives: the facts every report says (``render/report_facts.py``), the HTML page
toolkit (``render/html_toolkit.py``) and each page in its own module, read from the source with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dynaprof.render
from dynaprof.render import markdown, report_facts, report_html
from dynaprof.render.registry import RENDERERS, REPORTS, get_renderer

RENDER = Path(dynaprof.render.__file__).parent


def _tree(name: str) -> ast.Module:
    return ast.parse((RENDER / f"{name}.py").read_text(encoding="utf-8"))


def _defined(name: str) -> set[str]:
    """Top-level functions, classes and assigned names of ``render/<name>.py``."""
    out: set[str] = set()
    for node in _tree(name).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


def _imported_render_modules(name: str) -> set[str]:
    """The ``dynaprof.render.*`` modules ``render/<name>.py`` imports (``from dynaprof.render import x`` counts x)."""
    out: set[str] = set()
    for node in ast.walk(_tree(name)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "dynaprof.render":
                out |= {a.name for a in node.names}
            elif node.module.startswith("dynaprof.render."):
                out.add(node.module.removeprefix("dynaprof.render."))
        elif isinstance(node, ast.Import):
            out |= {a.name.removeprefix("dynaprof.render.") for a in node.names
                    if a.name.startswith("dynaprof.render.")}
    return out


#: what the reports share, before each formats it
SHARED = {"frames_by_time", "frame_id", "frame_time", "restart_reasons", "restart_detail_text", "graph_break_reasons",
          "sampler_text", "sampling_note", "cause_label", "cause_table_notes", "parametrized_properties",
          "traced_function_times", "PropertyRow"}


def test_the_shared_report_facts_have_one_home() -> None:
    assert _defined("report_facts") >= SHARED
    for page in ("markdown", "report_html", "html_toolkit", "compare_report", "ranks", "terminal"):
        assert _defined(page) & SHARED == set(), f"render/{page}.py defines a report fact again"


@pytest.mark.parametrize("page", ["markdown", "report_html", "compare_report"])
def test_each_report_reads_the_facts_module(page: str) -> None:
    assert "report_facts" in _imported_render_modules(page)


def test_the_facts_are_not_formatted_for_one_page() -> None:
    # plain text: neither Markdown escaping nor HTML pieces, so each page can escape for itself
    assert _imported_render_modules("report_facts") == set()
    assert not hasattr(report_facts, "md_escape")


def test_markdown_holds_only_markdown() -> None:
    assert {"md_escape", "md_table", "md_code_block", "details", "summary_markdown", "render_markdown"} <= \
        _defined("markdown")


def test_the_html_toolkit_knows_no_page() -> None:
    # the toolkit is below every page: it imports none of them and renders nothing itself
    assert _imported_render_modules("html_toolkit") == set()
    assert {"Page", "Table", "Col", "Cell", "Kpi", "Link", "render_page", "table", "inline_svg", "CSP"} <= \
        _defined("html_toolkit")
    assert not {n for n in _defined("html_toolkit") if n.startswith("render_") and n != "render_page"}
    for page in ("report_html", "compare_report", "ranks"):
        assert "html_toolkit" in _imported_render_modules(page)
    assert not (RENDER / "html.py").exists()


def test_the_registry_keeps_its_output_names() -> None:
    assert list(RENDERERS) == ["summary", "chrome_trace", "flamegraphs", "folded", "speedscope", "callgraph",
                               "snakeviz_profile", "markdown", "html"]
    assert REPORTS == ("markdown", "html")
    assert get_renderer("html") is report_html.render_html
    assert get_renderer("markdown") is markdown.render_markdown
