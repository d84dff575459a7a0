"""Folded stacks (Brendan Gregg's ``a;b;c <value>`` format) for flamegraph.pl, inferno,
speedscope and friends.

``stacks-compiler.folded`` and ``stacks-traced.folded``: one line per call path with self time;
the value is **self time in integer microseconds** (wall-time weighted, like every dynaprof
graph), not a sample count. Frames are ``function (short/file.py:line)``; ``;`` inside names is
written as ``,``. ``dynaprof.analysis.stacks.parse_folded`` / ``tree_from_folded`` read them back.
"""

from __future__ import annotations

from collections.abc import Sequence

from dynaprof.analysis.attribution import stack_categories
from dynaprof.analysis.stacks import View, build_tree, folded_lines
from dynaprof.model.session import Session
from dynaprof.render.base import Files, RenderContext

FOLDED_VIEWS: tuple[View, ...] = ("compiler", "traced")


def folded_text(
    session: Session, view: View = "compiler", frame: str | None = None, *, categories: Sequence[str] | None = None
) -> str:
    """Folded-stack text of one view (values in microseconds); empty when nothing was sampled."""
    if view not in FOLDED_VIEWS:
        raise ValueError(f"folded stacks exist for {', '.join(FOLDED_VIEWS)}, not {view!r}")
    lines = folded_lines(build_tree(session, view, frame, categories=categories), unit="us")
    return "".join(line + "\n" for line in lines)


def render_folded(ctx: RenderContext) -> Files:
    cats = stack_categories(ctx.session)
    return {f"stacks-{view}.folded": folded_text(ctx.session, view, categories=cats) for view in FOLDED_VIEWS}
