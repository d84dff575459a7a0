"""The one list of renderers. Each entry: name -> "module:function" (imported on use, so that
rendering a Markdown summary never imports networkx or Graphviz)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from dynaprof.render.base import Files, RenderContext, Renderer

#: name -> import path of a Renderer; order is the order outputs are written and listed
RENDERERS: dict[str, str] = {
    "summary": "dynaprof.render.terminal:render_summary_file",
    "markdown": "dynaprof.render.markdown:render_markdown",
    "chrome_trace": "dynaprof.render.chrome_trace:render_chrome_trace",
    "flamegraphs": "dynaprof.render.flamegraph:render_flamegraphs",
    "folded": "dynaprof.render.folded:render_folded",
    "speedscope": "dynaprof.render.speedscope:render_speedscope",
    "callgraph": "dynaprof.render.callgraph:render_callgraph",
    "snakeviz_profile": "dynaprof.render.snakeviz:render_snakeviz_profile",
    "html": "dynaprof.render.html:render_html",
}


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


def get_renderer(name: str) -> Renderer:
    module, _, func = RENDERERS[name].partition(":")
    return cast(Renderer, getattr(importlib.import_module(module), func))


def render_all(ctx: RenderContext, names: list[str] | None = None) -> Files:
    """Run the named renderers (default: all) and merge their files."""
    out: Files = {}
    for name in names if names is not None else list(RENDERERS):
        out.update(get_renderer(name)(ctx))
    return out
