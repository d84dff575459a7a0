"""The one list of renderers. Each entry: name -> "module:function" (imported on use, so that
rendering a Markdown summary never imports networkx or Graphviz)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from typing import cast

from dynaprof.render.base import Files, RenderContext, Renderer
from dynaprof.render.output_names import LINKED

#: name -> import path of a Renderer; order is the order outputs are written and listed: the
#: reports (``REPORTS``) come last, so they link only to files that were written
RENDERERS: dict[str, str] = {
    "summary": "dynaprof.render.terminal:render_summary_file",
    "chrome_trace": "dynaprof.render.chrome_trace:render_chrome_trace",
    "flamegraphs": "dynaprof.render.flamegraph:render_flamegraphs",
    "folded": "dynaprof.render.folded:render_folded",
    "speedscope": "dynaprof.render.speedscope:render_speedscope",
    "callgraph": "dynaprof.render.callgraph:render_callgraph",
    "snakeviz_profile": "dynaprof.render.snakeviz:render_snakeviz_profile",
    "markdown": "dynaprof.render.markdown:render_markdown",
    "html": "dynaprof.render.report_html:render_html",
}

#: the renderers whose outputs link to (or embed) the others': rendered after them
REPORTS: tuple[str, ...] = ("markdown", "html")


#: renderers that can begin early: ``start(ctx)`` does the part that needs this process and
#: returns a function giving the files, so slow outside work (Graphviz) overlaps other renderers
STARTERS: dict[str, str] = {
    "callgraph": "dynaprof.render.callgraph:start_callgraph",
}


def get_starter(name: str) -> Callable[[RenderContext], Callable[[], Files]] | None:
    path = STARTERS.get(name)
    if path is None:
        return None
    module, _, func = path.partition(":")
    return cast(Callable[[RenderContext], Callable[[], Files]], getattr(importlib.import_module(module), func))


def preload() -> None:
    """Import every renderer (and what it imports: networkx, graphviz...) now. ``dynaprof run``
    does this on a thread while the script runs, so none of it is paid after the script ends."""
    for path in (*RENDERERS.values(), *STARTERS.values()):
        try:
            importlib.import_module(path.partition(":")[0])
        except Exception:  # a renderer that cannot import is reported when it is used
            pass


def get_renderer(name: str) -> Renderer:
    module, _, func = RENDERERS[name].partition(":")
    return cast(Renderer, getattr(importlib.import_module(module), func))


def planned(names: Collection[str]) -> set[str]:
    """The linked files of the renderers in ``names`` that always write them (the full report):
    what ``RenderContext.made`` starts with, before any renderer ran."""
    return {x.file for x in LINKED if x.renderer in names and x.renderer in REPORTS}


def render_all(ctx: RenderContext, names: list[str] | None = None) -> Files:
    """Run the named renderers (default: all) and merge their files; ``ctx.made`` follows them."""
    names = list(RENDERERS) if names is None else names
    ctx.made = planned(names) if ctx.made is None else ctx.made
    out: Files = {}
    for name in names:
        files = get_renderer(name)(ctx)
        ctx.made.update(files)
        out.update(files)
    return out
