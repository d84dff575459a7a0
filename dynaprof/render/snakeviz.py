"""The run's cProfile data for snakeviz (its own module: it needs neither networkx nor Graphviz)."""

from __future__ import annotations

from dynaprof.analysis.pstats_tools import table_bytes
from dynaprof.render.base import Files, RenderContext


def render_snakeviz_profile(ctx: RenderContext) -> Files:
    """``cprofile/run.snakeviz.prof``: the run's cProfile data reshaped so snakeviz draws it
    (``dynaprof view RUN --snakeviz`` opens it)."""
    from dynaprof.analysis.pstats_tools import reshape_for_snakeviz

    table = ctx.cprofile.get("run")
    if not table:
        return {}
    return {"cprofile/run.snakeviz.prof": table_bytes(reshape_for_snakeviz(table))}
