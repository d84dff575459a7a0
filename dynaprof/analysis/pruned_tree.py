"""Stack trees pruned while they are built, for drawing big sessions.

The stacks are sorted once and each node's weight comes from prefix sums, so the cost follows
the nodes that are drawn (times log n), not the total length of all stacks: a 100,000-stack
session draws in about a second instead of building millions of nodes nobody sees."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate

from dynaprof.analysis.derived import Derived
from dynaprof.analysis.paths import group_end, sort_by_path
from dynaprof.analysis.stacks import (
    NO_COMPILER_STACK,
    SYNTHETIC,
    NodeKey,
    StackNode,
    View,
    _fkey,
    _synthetic,
    empty_stack_names,
    root_label,
)
from dynaprof.model.session import Session


def build_pruned_tree(
    session: Session,
    view: View,
    frame: str | None,
    min_width: float,
    *,
    categories: Sequence[str] | None = None,
    derived: Derived | None = None,
    user_calls: bool = False,
    gather: bool = False,
) -> tuple[StackNode, int, float]:
    """The sampled tree of ``view`` keeping only nodes of at least ``min_width`` of the total,
    with (number of pruned subtrees, their seconds). For drawing big sessions: the stacks are
    sorted once and each node's weight comes from prefix sums, so the cost follows the drawn
    nodes (times log n), not the total length of all stacks. ``user_calls``: the compiler view as
    the user calls Dynamo traced (``analysis.interpreter_frames``); node ``self_categories`` are filled too.
    ``gather``: a node's children too narrow to draw (or seen by fewer than :data:`MIN_SAMPLES`
    samples) become one frame, ``… N narrower frames``, when together they are wide enough (they
    are then drawn, not counted as pruned)."""
    if view == "inline":
        raise ValueError("the inline view has no per-sample stacks; use build_tree")
    root = root_label(session, frame)
    if session.samples is None:
        return root, 0, 0.0
    d = derived or Derived(session)
    rows, keys, synthetic = _rows(session, view, frame, d, categories, user_calls)
    order, sorted_keys = sort_by_path([r[0] for r in rows])
    rows = [rows[i] for i in order]  # sorted by path, stable
    synth_keys = {v: _synthetic(k) for k, v in synthetic.items()}
    functions = session.functions
    # a function's key made only for the nodes drawn, not for all of them on each of ~60 graphs
    key_of: Callable[[int], NodeKey] = keys.__getitem__ if keys is not None else lambda i: _fkey(functions[i])
    n = len(rows)
    cum_s, cum_n, cum_c = _prefix_sums(rows)

    def fill(node: StackNode, lo: int, hi: int) -> None:
        node.seconds = cum_s[hi] - cum_s[lo]
        node.samples = cum_n[hi] - cum_n[lo]
        node.categories = {c: v[hi] - v[lo] for c, v in cum_c.items() if v[hi] - v[lo] > 0}

    fill(root, 0, n)
    threshold = min_width * root.seconds
    pruned, pruned_s = 0, 0.0
    todo: list[tuple[StackNode, int, int, int]] = [(root, 0, n, 0)]
    while todo:
        node, lo, hi, depth = todo.pop()
        j = lo
        while j < hi and len(rows[j][0]) == depth:  # stacks ending exactly here (sorted first)
            node.self_seconds += rows[j][1]
            node.self_samples += rows[j][2]
            sc = node.self_categories
            sc[rows[j][3]] = sc.get(rows[j][3], 0.0) + rows[j][1]
            j += 1
        small: list[tuple[int, int]] = []  # row ranges of the children too narrow to draw
        while j < hi:
            head = rows[j][0][depth]
            end = group_end(sorted_keys, j, hi, depth) if sorted_keys is not None else None
            if end is None:
                end = bisect_right(rows, (*rows[j][0][:depth], head), lo=j, hi=hi, key=lambda r: r[0][: depth + 1])
            weight = cum_s[end] - cum_s[j]
            if weight >= threshold and weight > 0 and (not gather or cum_n[end] - cum_n[j] >= MIN_SAMPLES):
                child = node.child(synth_keys[head] if head < 0 else key_of(head))
                fill(child, j, end)
                todo.append((child, j, end, depth + 1))
            elif weight > 0:
                small.append((j, end))
            j = end
        small_s = sum(cum_s[b] - cum_s[a] for a, b in small)
        if gather and small and small_s >= GATHER_FLOOR * threshold:  # one frame for them all, drawn
            _gather(node, small, small_s, cum_n, cum_c)
        else:
            pruned += len(small)
            pruned_s += small_s
    return root, pruned, pruned_s


Row = tuple[tuple[int, ...], float, int, str]  # path, seconds, samples, category


def _rows(
    session: Session, view: View, frame: str | None, d: Derived, categories: Sequence[str] | None, user_calls: bool
) -> tuple[list[Row], Sequence[NodeKey] | None, dict[str, int]]:
    """One row per stack of ``view`` (unsorted), the view's node keys (None: the session's
    functions') and the synthetic frames' ids (negative) by name."""
    assert session.samples is not None
    stacks = session.samples.stacks
    indices = range(len(stacks)) if frame is None else d.by_frame.get(frame, [])
    keys: Sequence[NodeKey] | None = None  # the view's node keys; None: the session's functions'
    synthetic: dict[str, int] = {}

    def synth(name: str) -> int:  # synthetic frames get negative ids
        if name not in synthetic:
            synthetic[name] = -1 - len(synthetic)
        return synthetic[name]

    rows: list[Row] = []
    if view == "traced":  # the whole-pipeline user-code view: its own paths, phases for categories
        uv = d.user_view
        keys = uv.keys
        rows = [(uv.paths[i], stacks[i].seconds, stacks[i].samples, uv.phases[i]) for i in indices]
        indices = range(0)
    elif view == "compiler" and user_calls:
        fs = d.user_calls
        keys = fs.keys
        fcats = categories if categories is not None else d.categories
        rows = [(fs.paths[i] or (synth(NO_COMPILER_STACK),), stacks[i].seconds, stacks[i].samples, fcats[i])
                for i in indices]
        indices = range(0)
    cats: Sequence[str] = categories if categories is not None else d.categories if indices else []
    for i in indices:
        st, cat = stacks[i], cats[i]
        ids = st.compiler if view == "compiler" else st.traced
        path = tuple(ids) if ids else tuple(synth(name) for name in empty_stack_names(view, cat))
        rows.append((path, st.seconds, st.samples, cat))
    return rows, keys, synthetic


def _prefix_sums(rows: list[Row]) -> tuple[list[float], list[int], dict[str, list[float]]]:
    """Seconds, samples and each category's seconds summed over the rows before each index."""
    n = len(rows)
    # prefix sums from 0, added left to right as a loop would (accumulate: the same floats, at C speed)
    cum_s: list[float] = list(accumulate([r[1] for r in rows], initial=0.0))
    cum_n: list[int] = list(accumulate([r[2] for r in rows], initial=0))
    cum_c: dict[str, list[float]] = {}
    at: dict[str, list[int]] = {}
    for j, r in enumerate(rows):
        at.setdefault(r[3], []).append(j)
    for cat in {r[3] for r in rows}:  # each category's seconds at its rows, 0.0 elsewhere
        column = [0.0] * n
        for j in at[cat]:
            column[j] = rows[j][1]
        cum_c[cat] = list(accumulate(column, initial=0.0))
    return cum_s, cum_n, cum_c


def _gather(node: StackNode, small: list[tuple[int, int]], small_s: float, cum_n: list[int],
            cum_c: dict[str, list[float]]) -> None:
    """The children too narrow to draw (row ranges ``small``), drawn as one frame."""
    other = node.child(gathered_key(len(small)))
    other.seconds = other.self_seconds = small_s
    other.samples = other.self_samples = sum(cum_n[b] - cum_n[a] for a, b in small)
    for cat_name, acc_c in cum_c.items():
        part = sum(acc_c[b] - acc_c[a] for a, b in small)
        if part > 0:
            other.categories[cat_name] = other.self_categories[cat_name] = part


#: when gathering, a frame is drawn on its own only if at least this many samples passed through it:
#: a one-sample frame is one timer tick, and chains of them (one stack, 20 frames deep) made the
#: seed's graph 46-48 levels deep for a millisecond each; they are gathered, still drawn, one level
MIN_SAMPLES = 2
#: gathered frames are drawn from half the narrowest frame's width: the seed case's one-sample
#: leaves are about as wide as ``--min-width``, so a full width would leave 9% of it in gaps
GATHER_FLOOR = 0.5
#: the name of the frame standing for a node's children too narrow to draw, gathered (``…`` sorts
#: after every name, so it sits at the right of its siblings)
GATHERED_PREFIX = "\u2026 "
GATHERED = GATHERED_PREFIX + "{n} narrower frames"


def gathered_key(n: int) -> NodeKey:
    return (GATHERED.format(n=n), "", 0, SYNTHETIC)
