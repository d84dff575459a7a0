"""The run's cProfile data for snakeviz (its own module: it needs neither networkx nor Graphviz)."""

from __future__ import annotations

from dynaprof.analysis.pstats_tools import RUN_SNAKEVIZ_PROFILE, snakeviz_bytes
from dynaprof.render.base import Files, RenderContext


def render_snakeviz_profile(ctx: RenderContext) -> Files:
    """``cprofile/run.snakeviz.prof``: the run's cProfile data reshaped so snakeviz draws it
    (``dynaprof view RUN --snakeviz`` opens it)."""
    table = ctx.cprofile.get("run")
    if not table:
        return {}
    return {RUN_SNAKEVIZ_PROFILE: snakeviz_bytes(table)}
