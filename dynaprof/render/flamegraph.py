"""Interactive SVG flamegraphs of compile time (``docs/flamegraphs.md``).

Public entry points:

* :func:`render_flamegraphs` — the registry renderer: ``flame-compiler.svg``,
  ``flame-traced.svg``, ``flame-inline.svg`` (when Dynamo's profiler recorded inlines) and, when
  more than one compile has samples, ``flames/<safe key>-{compiler,traced}.svg``;
* :func:`flamegraph_svg` — one view of a session (or of one compile) as SVG text, for reports;
* :func:`tree_flamegraph_svg` — any :class:`StackNode` tree as SVG text;
* :func:`diff_flamegraph_svg` — differential graph of two trees (from ``flamegraph_diff``).
"""

from __future__ import annotations

from collections.abc import Sequence

from dynaprof import fmt
from dynaprof.analysis.attribution import PARAMETRIZATION_COLOUR
from dynaprof.analysis.derived import Derived
from dynaprof.analysis.interpreter_frames import INLINED_KINDS
from dynaprof.analysis.pruned_tree import GATHERED_PREFIX, build_pruned_tree
from dynaprof.analysis.stacks import (
    COLOUR_ORDER,
    INLINE_CATEGORIES,
    SYNTHETIC,
    VIEWS,
    StackNode,
    View,
    build_tree,
    clean_text,
    display_name,
    frames_with_samples,
    location,
    short_filename,
)
from dynaprof.fmt import safe_key
from dynaprof.model.session import CATEGORY_LABELS, PHASE_LABELS, PHASES, Session
from dynaprof.render.base import Files, RenderContext, RenderOptions
from dynaprof.render.colours import GATHERED_FILL, category_colour, pass_through_colour, phase_colour
from dynaprof.render.flamegraph_diff import diff_flamegraph_svg
from dynaprof.render.flamegraph_layout import layout
from dynaprof.render.flamegraph_svg import WIDTH, Frame, Panel, svg_document
from dynaprof.render.output_names import flamegraph_file
from dynaprof.render.report_facts import asked_rate

__all__ = [
    "VIEW_DESCRIPTIONS",
    "available_views",
    "diff_flamegraph_svg",
    "flamegraph_svg",
    "render_flamegraphs",
    "tree_flamegraph_svg",
]

VIEW_DESCRIPTIONS: dict[str, str] = {
    "compiler": "compiler view: real Python stacks of torch.compile, Dynamo's interpreter replaced by the user "
                "functions it traces; coloured by each frame's own time",
    "traced": "user-code view: every second on the user code it was spent for (Dynamo tracing it, AOT autograd "
              "and Inductor compiling what it added), coloured by compiler phase",
    "inline": "Dynamo's built-in profiler: per-inline tracing time (records only inlines that finished)",
}

_VIEW_TITLES: dict[str, str] = {
    "compiler": "compile time by compiler stack",
    "traced": "compile time by user code, whole pipeline",
    "inline": "Dynamo inline-tracing profile",
}


def available_views(session: Session) -> list[View]:
    """Views worth drawing for this session (``inline`` only when it has records)."""
    return [v for v in VIEWS if v != "inline" or session.inline_profile]


def _node_title(node: StackNode, total: float, view: str) -> str:
    lines = [display_name(node)]
    loc = location(node, short=False)
    if loc:
        lines.append(loc)
    pct = 100.0 * node.seconds / total if total > 0 else 0.0
    if view == "inline":
        count = f"{node.self_samples:,} call{'s' if node.self_samples != 1 else ''} at this path"
    else:
        count = f"{node.samples:,} sample{'s' if node.samples != 1 else ''}"
    lines.append(f"{fmt.duration(node.seconds, 'ms')}, {pct:.2f}% of total, {count}")
    order, labels = colour_keys(view)
    cat = node.dominant_category(order)
    if cat is not None:
        share = node.categories[cat] / node.seconds if node.seconds > 0 else 1.0
        label = labels.get(cat, cat)
        lines.append(f"phase: {label}" if share > 0.995 else f"mostly {label} ({100 * share:.0f}%)")
    if view != "traced" and node.self_seconds > 0:
        own = node.dominant_category(order, own=True)
        if own is not None:
            self_pct = 100.0 * node.self_seconds / total if total > 0 else 0.0
            lines.append(f"self {fmt.duration(node.self_seconds, 'ms')} ({self_pct:.2f}%): "
                         f"{labels.get(own, own)}")
    if node.kind in INLINED_KINDS:
        lines.append("Dynamo tracing this user function (its interpreter frames run/step/CALL/inline_call "
                     "stand as this frame)")
    elif node.name.startswith(GATHERED_PREFIX):
        lines.append("frames too narrow to draw, gathered")
    return "\n".join(lines)


def colour_keys(view: str) -> tuple[Sequence[str], dict[str, str]]:
    """What a view's node ``categories`` hold, in legend order, with their labels: phases in the
    user-code view, the inline view's two kinds of inlined call, else the phase groups (the
    cause x phase table's columns, so legend and table print one figure under one label)."""
    if view == "traced":
        return PHASES, PHASE_LABELS
    if view == "inline":
        return tuple(INLINE_CATEGORIES), INLINE_CATEGORIES
    return COLOUR_ORDER, COMPILER_LABELS


#: the compiler view: parametrization (a cause, in every phase) in its own colour, the other
#: causes' seconds by phase group
COMPILER_LABELS: dict[str, str] = {PARAMETRIZATION_COLOUR: "parametrization (every phase)", **CATEGORY_LABELS}
#: the legend's groups when parametrization has its own colour: they hold less than the table's
#: columns of the same name, so they say so
OTHER_CAUSES_SUFFIX = ", other causes"


def _legend(root: StackNode, view: str = "compiler", base_s: float | None = None) -> list[tuple[str, str]]:
    """(colour, label and share) per category, or per phase in the user-code view. Shares are of
    ``base_s`` (the compile time the graph covers) when known, rounded as every other output
    rounds them (``fmt.pct``), so the legend, the verdict and the tables print one figure."""
    total = base_s if base_s else root.seconds
    out = []
    order, labels = colour_keys(view)
    if view == "compiler" and root.categories.get(PARAMETRIZATION_COLOUR, 0.0) > 0:
        labels = {k: v if k == PARAMETRIZATION_COLOUR else v + OTHER_CAUSES_SUFFIX for k, v in labels.items()}
    for cat in order:
        v = root.categories.get(cat, 0.0)
        if v > 0 and total > 0:
            colour = phase_colour(cat) if view == "traced" else category_colour(cat)
            out.append((colour, f"{labels[cat]} {fmt.pct(v, total)}"))
    if view == "compiler" and out:
        out.append((pass_through_colour(None), "pale: little self time (passes it to its callees; tint of their "
                                               "category)"))
    return out


#: a compiler-view frame takes its self category's colour when its self time is at least this
#: share of its width (one stray sample does not colour Dynamo's whole entry trunk)
SELF_SHARE = 0.05


def _fill(node: StackNode, view: str, min_self: float = 0.0) -> str:
    """The user-code view: the frame's dominant phase. Otherwise its own (self) category: the
    category of the time that ended in it, when that is at least ``min_self`` seconds (as wide as
    the narrowest frame drawn) and :data:`SELF_SHARE` of the frame; a frame that (mostly) passes
    time on to its callees is a pale tint of its dominant category."""
    if view == "traced":
        return phase_colour(node.dominant_category(PHASES), node.name)
    if node.name.startswith(GATHERED_PREFIX) and node.kind == SYNTHETIC:
        return GATHERED_FILL
    if view == "compiler" and node.categories:  # trees with categories (not read from folded text)
        if node.self_seconds <= 0 or node.self_seconds < max(min_self, SELF_SHARE * node.seconds):
            return pass_through_colour(node.dominant_category(), node.name)
        return category_colour(node.dominant_category(own=True), node.name)
    return category_colour(node.dominant_category(colour_keys(view)[0]), node.name)


def _pruned_note(count: int, seconds: float, min_width: float, total: float = 0.0) -> str:
    took = fmt.duration(seconds, "graph")
    share = f", {100 * seconds / total:.1f}% of the total" if total > 0 else ""
    return f"{count:,} frame{'s' if count != 1 else ''} < {100 * min_width:g}% pruned ({took}{share})"


def tree_flamegraph_svg(
    root: StackNode,
    *,
    title: str,
    subtitle: str | list[str],
    options: RenderOptions | None = None,
    view: str = "compiler",
    empty_message: str = "no samples were taken",
    pruned: tuple[int, float] = (0, 0.0),
    static: bool = False,
    width: int | None = None,
    prepruned: bool = False,
    base_s: float | None = None,
) -> str:
    """A flamegraph of ``root`` (widths: seconds; colours: each frame's own (self) category where
    the tree has self categories, else its dominant one, or its dominant phase in the user-code
    view, ``view="traced"``). ``pruned``: (subtrees, seconds) already left out of ``root`` by
    ``build_pruned_tree``; ``prepruned``: ``root`` comes from it (drawn without pruning again);
    ``base_s``: the compile time the legend's shares are of (default: the sampled total)."""
    options = options or RenderOptions()
    subtitles = [subtitle] if isinstance(subtitle, str) else list(subtitle)
    # a tree from build_pruned_tree is pruned already (its gathered frames may be narrower)
    min_width = 0.0 if prepruned else options.min_width
    lay = layout(root, lambda n: n.seconds, StackNode.sorted_children, min_width, lambda n: n.children.values())
    min_self = options.min_width * lay.total
    frames = [
        Frame(
            r.x,
            r.width,
            r.depth,
            _node_title(r.node, lay.total, view),
            display_name(r.node),
            _fill(r.node, view, min_self),
        )
        for r in lay.rects
    ]
    pruned_count, pruned_s = lay.pruned_frames + pruned[0], lay.pruned_weight + pruned[1]
    if pruned_count:
        note = _pruned_note(pruned_count, pruned_s, options.min_width, lay.total)
        if subtitles:
            subtitles[-1] = f"{subtitles[-1]} · {note}"
        else:
            subtitles.append(note)
    panel = Panel(frames, lay.max_depth, empty_message=empty_message)
    return svg_document(
        title=title,
        subtitles=subtitles,
        panels=[panel],
        legend=_legend(root, view, base_s),
        icicle=options.icicle,
        total_s=lay.total,
        static=static,
        width=width or WIDTH,
    )


def _title(session: Session, view: str, frame: str | None) -> str:
    target = clean_text(session.run.target) or "run"
    title = f"{target}: {_VIEW_TITLES.get(view, view)}"
    if frame is not None:
        f = session.frame(frame)
        if f is None:
            return f"{title}, compile {frame}"
        where = f"{short_filename(clean_text(f.filename))}:{f.lineno}"
        return f"{title}, compile {f.trace_id} {clean_text(f.name)} ({where})"
    return title


def _compile_s(session: Session, frame: str | None) -> float | None:
    """The compile time one graph covers: its frame's, or the run's."""
    if frame is not None:
        f = session.frame(frame)
        return f.compile_time_s if f is not None else None
    return session.total_compile_s if session.frames else None


def _stats(session: Session, view: str, frame: str | None, tree: StackNode) -> str:
    parts: list[str] = []
    compile_s = _compile_s(session, frame)
    if view == "inline":
        parts.append(f"{tree.seconds:.3f} s of finished inlines")
        parts.append(f"{tree.samples:,} inline calls recorded")
        if compile_s:
            parts.append(f"{compile_s:.3f} s compile time")
        return " · ".join(parts)
    sampled = f"{fmt.duration(tree.seconds)} sampled"
    if compile_s:
        sampled += f" of {fmt.duration(compile_s)} compile time"
    parts.append(sampled)
    parts.append(f"{tree.samples:,} samples")
    s = session.samples
    if s is not None:
        rate = f"{s.achieved_hz:,.0f} Hz achieved" if s.achieved_hz is not None else "achieved rate unknown"
        parts.append(f"{rate} ({asked_rate(s)}, {s.source})")
    return " · ".join(parts)


def _empty_reason(session: Session, view: str, frame: str | None) -> str:
    if view == "inline":
        return "no inline records: Dynamo's built-in profiler was not enabled or recorded nothing"
    if session.samples is None:
        sampler = clean_text(session.capture.sampler) or "none"
        return f"no samples were taken: the run had no stack sampler (sampler: {sampler})"
    if frame is not None:
        return "no samples were taken during this compile (it was shorter than the sampling interval)"
    return "no samples were taken: the sampler recorded no stacks during compilation"


def flamegraph_svg(
    session: Session,
    view: View = "compiler",
    frame: str | None = None,
    options: RenderOptions | None = None,
    *,
    categories: Sequence[str] | None = None,
    derived: Derived | None = None,
    static: bool = False,
    width: int | None = None,
) -> str:
    """SVG text of one view (``compiler``, ``traced`` or ``inline``), for the whole run or one
    compile (``CompiledFrame.key``). Pass the render's ``derived`` (``RenderContext.derived``)
    when drawing many graphs of one session, so its stacks are classified once. ``static`` and
    ``width``: a picture without script or controls (``svg_document``)."""
    options = options or RenderOptions()
    pruned: tuple[int, float] = (0, 0.0)
    if view == "inline":
        tree = build_tree(session, view, frame, categories=categories, derived=derived)
    else:
        tree, count, secs = build_pruned_tree(
            session, view, frame, options.min_width, categories=categories, derived=derived,
            user_calls=view == "compiler", gather=True,
        )
        pruned = (count, secs)
    return tree_flamegraph_svg(
        tree,
        title=_title(session, view, frame),
        subtitle=[VIEW_DESCRIPTIONS[view], _stats(session, view, frame, tree)],
        options=options,
        view=view,
        empty_message=_empty_reason(session, view, frame),
        pruned=pruned,
        static=static,
        width=width,
        prepruned=view != "inline",
        base_s=_compile_s(session, frame) if view != "inline" else None,
    )


def frame_file_names(session: Session, limit: int | None = None, derived: Derived | None = None) -> dict[str, str]:
    """Filename-safe, unique stem per compile key that has samples (empty with fewer than 2);
    with ``limit``, only for the frames with the most sampled time. ``derived``: the render's."""
    if len(frames_with_samples(session, derived=derived)) < 2:
        return {}
    keys = frames_with_samples(session, limit, derived)
    out: dict[str, str] = {}
    used: set[str] = set()
    for key in keys:
        stem = safe_key(key)
        n = 2
        while stem in used:
            stem = f"{safe_key(key)}~{n}"
            n += 1
        used.add(stem)
        out[key] = stem
    return out


def run_flamegraph(ctx: RenderContext, view: View) -> str:
    """The run-level flamegraph of one view, made once per render (the report embeds it)."""
    key = ("flamegraph", view)
    if key not in ctx.memo:
        ctx.memo[key] = flamegraph_svg(ctx.session, view, None, ctx.options, derived=ctx.derived)
    return str(ctx.memo[key])


def render_flamegraphs(ctx: RenderContext) -> Files:
    s, opts = ctx.session, ctx.options
    files: Files = {}
    for view in available_views(s):
        files[flamegraph_file(view)] = run_flamegraph(ctx, view)
    sampled: tuple[View, ...] = ("compiler", "traced")
    for key, stem in frame_file_names(s, opts.max_frame_graphs, ctx.derived).items():
        for view in sampled:
            files[f"flames/{stem}-{view}.svg"] = flamegraph_svg(s, view, key, opts, derived=ctx.derived)
    return files
