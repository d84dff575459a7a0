"""Differential flamegraphs (``dynaprof compare``): where did compile time move between runs?

Two panels over the union of both trees (``dynaprof.analysis.stacks.diff_trees``):

* **NEW**: widths are the time in NEW; stacks that vanished are not in it;
* **BASE**: widths are the time in BASE, so stacks removed in NEW show up here.

Both are coloured by each frame's change in self time (NEW minus BASE): red = more time in NEW,
blue = less, near-white = unchanged; intensity is the change relative to the largest in the graph.
Each panel is as wide as its run's total (the larger run spans the full width). Frames found in
one run only are outlined (dark red: only in NEW, dark blue: only in BASE) and their labels start
with ``+`` / ``-``.
Frames are matched by function name, file name below site-packages and kind, so runs from two
environments or torch versions line up (``portable=False`` also requires equal line numbers).
With ``normalize=True`` the delta compares shares of each run's total instead of seconds (useful
when the two runs had different sampling rates or amounts of work).
"""

from __future__ import annotations

from dynaprof import fmt
from dynaprof.analysis.stack_diff import DiffNode, diff_trees
from dynaprof.analysis.stacks import StackNode, display_name, location
from dynaprof.render.base import RenderOptions
from dynaprof.render.flamegraph_layout import Layout, layout
from dynaprof.render.flamegraph_svg import Frame, Panel, diff_colour, svg_document


class _Delta:
    """Each frame's change in self time (what ended exactly there), in seconds or, normalizing,
    in share of the run's total: the colour. (An inclusive change would make the root the
    reddest frame and every caller of a change as red as it.)"""

    def __init__(self, root: DiffNode, normalize: bool) -> None:
        self.normalize = normalize
        self.base_total = root.base_s
        self.new_total = root.new_s
        self.max_abs = max((abs(self(n)) for _, n in root.walk()), default=0.0)

    def shares(self, node: DiffNode) -> tuple[float, float]:
        b = node.base_s / self.base_total if self.base_total > 0 else 0.0
        n = node.new_s / self.new_total if self.new_total > 0 else 0.0
        return b, n

    def self_shares(self, node: DiffNode) -> tuple[float, float]:
        b = node.base_self_s / self.base_total if self.base_total > 0 else 0.0
        n = node.new_self_s / self.new_total if self.new_total > 0 else 0.0
        return b, n

    def __call__(self, node: DiffNode) -> float:
        if self.normalize:
            b, n = self.self_shares(node)
            return n - b
        return node.self_delta_s

    def ratio(self, node: DiffNode) -> float:
        d = self(node)
        if self.max_abs <= 0 or abs(d) <= 1e-12 * max(1.0, self.max_abs):
            return 0.0
        return d / self.max_abs

    def title(self, node: DiffNode) -> str:
        ref = StackNode(node.name, node.filename, node.lineno, node.kind)
        lines = [display_name(ref)]
        loc = location(ref, short=False)
        if loc:
            lines.append(loc)
        if node.base_s > 0:
            rel = "removed in NEW" if node.new_s <= 0 else f"{100 * node.delta_s / node.base_s:+.1f}%"
        else:
            rel = "only in NEW" if node.new_s > 0 else "no time in either"
        base, new = fmt.duration(node.base_s, "diff"), fmt.duration(node.new_s, "diff")
        lines.append(f"base {base}, new {new}, delta {fmt.duration(node.delta_s, 'diff', True)} ({rel})")
        base, new = fmt.duration(node.base_self_s, "diff"), fmt.duration(node.new_self_s, "diff")
        lines.append(f"self: base {base}, new {new}, delta {fmt.duration(node.self_delta_s, 'diff', True)}")
        if self.normalize:
            b, n = self.shares(node)
            lines.append(f"share of total: base {100 * b:.2f}%, new {100 * n:.2f}%, delta {100 * (n - b):+.2f} points")
        return "\n".join(lines)


#: outlines of the frames found in one run only (and their labels' first character)
ONLY_NEW = ("#7f0000", "+")
ONLY_BASE = ("#08306b", "-")


def _only(node: DiffNode) -> tuple[str, str] | None:
    if node.base_s <= 0 < node.new_s:
        return ONLY_NEW
    if node.new_s <= 0 < node.base_s:
        return ONLY_BASE
    return None


def _panel(lay: Layout[DiffNode], delta: _Delta, heading: str, empty: str, scale: float) -> Panel:
    frames = []
    for r in lay.rects:
        label = display_name(StackNode(r.node.name, r.node.filename, r.node.lineno, r.node.kind))
        only = _only(r.node) if r.depth > 0 else None
        frames.append(Frame(
            r.x,
            r.width,
            r.depth,
            delta.title(r.node),
            f"{only[1]} {label}" if only else label,
            diff_colour(delta.ratio(r.node)),
            only[0] if only else "",
        ))
    return Panel(frames, lay.max_depth, heading, empty, scale)


def _pruned(lay: Layout[DiffNode], min_width: float) -> str:
    if not lay.pruned_frames:
        return ""
    n = lay.pruned_frames
    took = fmt.duration(lay.pruned_weight, "diff")
    return f"; {n:,} frame{'s' if n != 1 else ''} < {100 * min_width:g}% pruned ({took})"


def diff_flamegraph_svg(
    base: StackNode,
    new: StackNode,
    *,
    title: str,
    subtitle: str,
    options: RenderOptions,
    normalize: bool = False,
    portable: bool = True,
) -> str:
    """SVG text of a differential flamegraph of two stack trees (see the module docstring).
    ``portable``: match frames by name, short file name and kind, ignoring line numbers and
    install prefixes (two environments or torch versions); ``False`` matches them exactly."""
    root = diff_trees(base, new, portable=portable)
    delta = _Delta(root, normalize)
    new_lay = layout(root, lambda n: n.new_s, DiffNode.sorted_children, options.min_width)
    base_lay = layout(root, lambda n: n.base_s, DiffNode.sorted_children, options.min_width)
    removed = sum(1 for _, n in root.walk() if n.base_s > 0 and n.new_s <= 0)
    added = sum(1 for _, n in root.walk() if n.new_s > 0 and n.base_s <= 0)
    # each panel as wide as its run's total, the larger one the full width (with --normalize both
    # are shares of their own total, so both are full width)
    big = max(root.new_s, root.base_s)
    new_scale = 1.0 if normalize or big <= 0 else root.new_s / big
    base_scale = 1.0 if normalize or big <= 0 else root.base_s / big
    panels = [
        _panel(
            new_lay,
            delta,
            f"NEW: widths are time in NEW ({fmt.duration(root.new_s, 'diff')}); {added:,} frame"
            f"{'s' if added != 1 else ''} only in NEW (+){_pruned(new_lay, options.min_width)}",
            "no time in NEW",
            new_scale,
        ),
        _panel(
            base_lay,
            delta,
            f"BASE: widths are time in BASE ({fmt.duration(root.base_s, 'diff')}); {removed:,} frame"
            f"{'s' if removed != 1 else ''} removed in NEW (-) appear only here{_pruned(base_lay, options.min_width)}",
            "no time in BASE",
            base_scale,
        ),
    ]
    what = "share of total" if normalize else "time"
    subtitles = [
        subtitle,
        f"colour = change in each frame's own (self) {what} from BASE to NEW: red = more in NEW, blue = less, pale ="
        f" unchanged; total {fmt.duration(root.base_s, 'diff')} -> {fmt.duration(root.new_s, 'diff')}"
        f" ({fmt.duration(root.delta_s, 'diff', True)})",
    ]
    legend = [
        (diff_colour(1.0), "more time in NEW"),
        (diff_colour(0.4), "a little more"),
        (diff_colour(0.0), "unchanged"),
        (diff_colour(-0.4), "a little less"),
        (diff_colour(-1.0), "less time in NEW"),
        (ONLY_NEW[0], "outlined, '+': only in NEW"),
        (ONLY_BASE[0], "outlined, '-': only in BASE"),
    ]
    return svg_document(
        title=title,
        subtitles=subtitles,
        panels=panels,
        legend=legend,
        icicle=options.icicle,
        total_s=root.new_s,
    )
