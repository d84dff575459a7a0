"""Differential stack trees: two runs' trees merged into one, for ``dynaprof compare``'s
red/blue flamegraphs. Nodes match on function name, file below site-packages and kind by
default (``portable``), so runs from two environments or torch versions line up."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from dynaprof.analysis.stacks import NodeKey, StackNode, folded_label, paused_gc, short_filename


@dataclass(slots=True)
class DiffNode:
    """A node of the union of two trees, with its inclusive seconds in each (0.0 when absent)."""

    name: str
    filename: str = ""
    lineno: int = 0
    kind: str = "root"
    base_s: float = 0.0
    new_s: float = 0.0
    base_samples: int = 0
    new_samples: int = 0
    #: the self seconds (time that ended exactly here) in each
    base_self_s: float = 0.0
    new_self_s: float = 0.0
    children: dict[NodeKey, DiffNode] = field(default_factory=dict)

    @property
    def delta_s(self) -> float:
        return self.new_s - self.base_s

    @property
    def self_delta_s(self) -> float:
        return self.new_self_s - self.base_self_s

    def sorted_children(self) -> list[DiffNode]:
        return [self.children[k] for k in sorted(self.children)]

    def walk(self) -> Iterator[tuple[int, DiffNode]]:
        todo: list[tuple[int, DiffNode]] = [(0, self)]
        while todo:
            depth, node = todo.pop()
            yield depth, node
            todo.extend((depth + 1, c) for c in reversed(node.sorted_children()))


def portable_tree(root: StackNode) -> StackNode:
    """A copy with children keyed by (name, short file name, kind): line numbers and install
    prefixes dropped, merging what differs only by them, so that trees from two environments or
    torch versions line up."""
    out = StackNode(root.name, root.filename, root.lineno, root.kind)
    todo: list[tuple[StackNode, StackNode]] = [(root, out)]
    with paused_gc():
        while todo:
            src, dst = todo.pop()
            dst.seconds += src.seconds
            dst.samples += src.samples
            dst.self_seconds += src.self_seconds
            dst.self_samples += src.self_samples
            for cat, v in src.categories.items():
                dst.categories[cat] = dst.categories.get(cat, 0.0) + v
            for c in src.children.values():
                todo.append((c, dst.child((c.name, short_filename(c.filename), 0, c.kind))))
    return out


def diff_trees(base: StackNode, new: StackNode, *, portable: bool = True) -> DiffNode:
    """Union of two trees by call path; the roots are matched whatever their names. With
    ``portable`` (default) frames match by name, short file name and kind (:func:`portable_tree`)."""
    if portable:
        base, new = portable_tree(base), portable_tree(new)
    root = DiffNode(new.name, new.filename, new.lineno, new.kind)
    todo: list[tuple[DiffNode, StackNode | None, StackNode | None]] = [(root, base, new)]
    with paused_gc():
        _fill_diff(todo)
    return root


def _fill_diff(todo: list[tuple[DiffNode, StackNode | None, StackNode | None]]) -> None:
    while todo:
        d, b, n = todo.pop()
        if b is not None:
            d.base_s, d.base_samples, d.base_self_s = b.seconds, b.samples, b.self_seconds
        if n is not None:
            d.new_s, d.new_samples, d.new_self_s = n.seconds, n.samples, n.self_seconds
        keys = set(b.children if b is not None else ()) | set(n.children if n is not None else ())
        for k in sorted(keys):
            child = DiffNode(*k)
            d.children[k] = child
            todo.append(
                (child, b.children.get(k) if b is not None else None, n.children.get(k) if n is not None else None)
            )


def diff_paths(base: StackNode, new: StackNode, *, portable: bool = True) -> dict[tuple[str, ...], tuple[float, float]]:
    """(base_s, new_s) per call path (folded labels below the root; the root is ``()``)."""
    out: dict[tuple[str, ...], tuple[float, float]] = {}
    todo: list[tuple[tuple[str, ...], DiffNode]] = [((), diff_trees(base, new, portable=portable))]
    while todo:
        path, node = todo.pop()
        out[path] = (node.base_s, node.new_s)
        for c in node.children.values():
            label = folded_label(StackNode(c.name, c.filename, c.lineno, c.kind))
            todo.append(((*path, label), c))
    return out
