"""The reports link only files that were written (the registry names them, ``render/output_names.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dynaprof.render.base import RenderContext, RenderOptions
from dynaprof.render.output_names import CALLGRAPH_SVG, LINKED, REPORT_HTML, flamegraph_file
from dynaprof.render.registry import RENDERERS, REPORTS, render_all
from dynaprof.run_folder import writer
from tests.factories import seed_session


def _links(summary: str) -> set[str]:
    return {x.file for x in LINKED if f"]({x.file})" in summary}


def test_no_callgraph_link_without_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no Graphviz: callgraph.svg is not made
    out = tmp_path / "run"
    _, notes = writer.write_run_folder(seed_session(), out, RenderOptions(exports="none"))
    assert not (out / CALLGRAPH_SVG).exists() and any("callgraph.svg not made" in n for n in notes)
    links = _links((out / "summary.md").read_text())
    assert CALLGRAPH_SVG not in links
    assert {REPORT_HTML, flamegraph_file("compiler"), flamegraph_file("traced")} <= links
    assert all((out / name).is_file() for name in links)


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")
def test_callgraph_link_when_written(tmp_path: Path) -> None:
    out = tmp_path / "run"
    writer.write_run_folder(seed_session(), out, RenderOptions(exports="none"))
    links = _links((out / "summary.md").read_text())
    assert CALLGRAPH_SVG in links and all((out / name).is_file() for name in links)


def test_a_failed_renderer_is_not_linked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = writer.get_renderer

    def broken(name: str):  # type: ignore[no-untyped-def]
        if name == "flamegraphs":
            def fail(ctx: RenderContext) -> dict[str, str]:
                raise RuntimeError("boom")
            return fail
        return real(name)

    monkeypatch.setattr(writer, "get_renderer", broken)
    out = tmp_path / "run"
    _, notes = writer.write_run_folder(seed_session(), out, RenderOptions(exports="none"))
    assert any("could not render flamegraphs" in n for n in notes)
    links = _links((out / "summary.md").read_text())
    assert flamegraph_file("compiler") not in links and REPORT_HTML in links


def test_render_all_links_what_it_made() -> None:
    files = render_all(RenderContext(seed_session(), use_dot=False))
    summary = files["summary.md"]
    assert isinstance(summary, str)
    assert _links(summary) <= set(files) | {REPORT_HTML} and CALLGRAPH_SVG not in _links(summary)


def test_reports_come_after_what_they_link() -> None:
    order = list(RENDERERS)
    assert order[-len(REPORTS):] == list(REPORTS)
    assert {x.renderer for x in LINKED} <= set(RENDERERS)
