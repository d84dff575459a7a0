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
from dynaprof.analysis.stacks import (
    NO_COMPILER_STACK,
    NOT_TRACING,
    StackNode,
    View,
    folded_label,
    stacks_by_frame,
)
from dynaprof.model.session import CATEGORY_LABELS, Session
from dynaprof.render.base import Files, RenderContext

FOLDED_VIEWS: tuple[View, ...] = ("compiler", "traced")


def folded_text(
    session: Session, view: View = "compiler", frame: str | None = None, *, categories: Sequence[str] | None = None
) -> str:
    """Folded-stack text of one view (values in microseconds); empty when nothing was sampled.

    Built straight from the stacks (no tree): one join per distinct stack, so it stays linear in
    the sampled data; lines are sorted for deterministic output."""
    if view not in FOLDED_VIEWS:
        raise ValueError(f"folded stacks exist for {', '.join(FOLDED_VIEWS)}, not {view!r}")
    if session.samples is None:
        return ""
    cats = stack_categories(session) if categories is None else categories
    labels = [folded_label(StackNode(f.name, f.filename, f.lineno, f.kind)) for f in session.functions]
    stacks = session.samples.stacks
    indices = range(len(stacks)) if frame is None else stacks_by_frame(session).get(frame, [])
    agg: dict[str, float] = {}
    for i in indices:
        st = stacks[i]
        ids = st.compiler if view == "compiler" else st.traced
        if ids:
            path = ";".join(labels[j] for j in ids)
        elif view == "compiler":
            path = NO_COMPILER_STACK
        else:
            path = f"{NOT_TRACING};[{CATEGORY_LABELS.get(cats[i], cats[i])}]"
        agg[path] = agg.get(path, 0.0) + st.seconds
    lines = (f"{path} {round(secs * 1e6)}\n" for path, secs in sorted(agg.items()) if round(secs * 1e6) > 0)
    return "".join(lines)


def render_folded(ctx: RenderContext) -> Files:
    cats = stack_categories(ctx.session)
    return {f"stacks-{view}.folded": folded_text(ctx.session, view, categories=cats) for view in FOLDED_VIEWS}
