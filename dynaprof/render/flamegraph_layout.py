"""Flamegraph layout: a tree in, rectangles out (pure, no SVG).

Coordinates are fractions of the root's weight: the root spans ``[0, 1]``, each child starts
where its previous sibling ended (children in the tree's sorted order, starting at the parent's
left edge; the parent's self time is the gap on the right), and ``depth`` is the tree depth
(root 0). Frames narrower than ``min_width`` are pruned with their whole subtree and counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

N = TypeVar("N")


@dataclass(frozen=True)
class Rect(Generic[N]):
    node: N
    x: float  # left edge, fraction of the total
    width: float  # fraction of the total
    depth: int  # 0 for the root


@dataclass
class Layout(Generic[N]):
    rects: list[Rect[N]]
    total: float  # weight of the root
    max_depth: int  # deepest drawn frame (0 when only the root is drawn, -1 when nothing is)
    pruned_frames: int  # frames (with time) not drawn because they were too narrow
    pruned_weight: float  # weight of the pruned subtrees (counted once)


def layout(
    root: N,
    weight: Callable[[N], float],
    children: Callable[[N], Sequence[N]],
    min_width: float = 0.0,
    unordered_children: Callable[[N], Iterable[N]] | None = None,
) -> Layout[N]:
    """Lay out ``root``'s tree; nodes with zero weight are skipped (not counted as pruned).
    ``unordered_children`` (optional, faster) is used to count the frames inside pruned
    subtrees, where order does not matter."""
    count_children = unordered_children or children
    total = weight(root)
    rects: list[Rect[N]] = []
    pruned = 0
    pruned_w = 0.0
    if total <= 0:
        return Layout(rects, max(total, 0.0), -1, 0, 0.0)
    max_depth = 0
    todo: list[tuple[N, float, int]] = [(root, 0.0, 0)]
    while todo:
        node, x, depth = todo.pop()
        w = weight(node) / total
        if depth > 0 and w < min_width:
            pruned_w += weight(node)
            pruned += _count_weighted(node, weight, count_children)
            continue
        rects.append(Rect(node, x, w, depth))
        max_depth = max(max_depth, depth)
        placed: list[tuple[N, float, int]] = []
        cx = x
        for c in children(node):
            cw = weight(c)
            if cw <= 0:
                continue
            placed.append((c, cx, depth + 1))
            cx += cw / total
        todo.extend(reversed(placed))
    return Layout(rects, total, max_depth, pruned, pruned_w)


def _count_weighted(node: N, weight: Callable[[N], float], children: Callable[[N], Iterable[N]]) -> int:
    count = 0
    todo = [node]
    while todo:
        n = todo.pop()
        if weight(n) > 0:
            count += 1
            todo.extend(children(n))
    return count
