"""speedscope export (https://www.speedscope.app, file format
https://www.speedscope.app/file-format-schema.json).

``speedscope.json`` holds one "sampled" profile per view (compiler, traced, and inline when
Dynamo's profiler recorded inlines) and, when more than one compile has samples, a compiler and
a traced profile per compile. Samples are the tree's call paths with self time (aggregated, so
speedscope's "Time Order" view is not chronological); weights are seconds (``unit: "seconds"``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

from dynaprof.analysis.derived import Derived
from dynaprof.analysis.paths import path_keys
from dynaprof.analysis.stacks import (
    SYNTHETIC,
    StackNode,
    View,
    build_tree,
    clean_text,
    display_name,
    empty_stack_names,
    frames_with_samples,
    root_label,
)
from dynaprof.model.session import Session
from dynaprof.render.base import Files, RenderContext
from dynaprof.render.gz import SPEEDSCOPE_LEVEL, SUFFIX, gzip_later

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"

_VIEW_NAMES = {"compiler": "compiler stacks", "traced": "traced user code", "inline": "Dynamo inline profile"}


class _Frames:
    """speedscope's shared frame table, deduplicated by (name, file, line)."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.index: dict[tuple[str, str, int], int] = {}

    def __call__(self, node: StackNode) -> int:
        name = display_name(node)
        key = (name, node.filename, node.lineno)
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.frames)
            frame: dict[str, Any] = {"name": name}
            if node.filename:
                frame["file"] = clean_text(node.filename)
                if node.lineno:
                    frame["line"] = node.lineno
            self.frames.append(frame)
        return i


def _profile(name: str, samples: Sequence[Sequence[int]], weights: list[float]) -> dict[str, Any]:
    return {
        "type": "sampled",
        "name": name,
        "unit": "seconds",
        "startValue": 0,
        "endValue": sum(weights),
        "samples": samples,
        "weights": weights,
    }


def _tree_samples(root: StackNode, frames: _Frames) -> tuple[list[list[int]], list[float]]:
    """Call paths with self time of a tree (the inline view, which has no per-sample stacks)."""
    samples: list[list[int]] = []
    weights: list[float] = []
    todo: list[tuple[list[int], StackNode]] = [([], root)]
    while todo:
        path, node = todo.pop()
        here = path if node is root else [*path, frames(node)]
        if node.self_seconds > 0:
            samples.append(here or [frames(root)])
            weights.append(node.self_seconds)
        todo.extend((here, c) for c in reversed(node.sorted_children()))
    return samples, weights


def _stack_samples(
    session: Session, view: View, frame: str | None, d: Derived, frames: _Frames, ids: Sequence[int],
    mapped: dict[View, tuple[list[list[int]], list[Any]]],
) -> tuple[list[list[int]], list[float]]:
    """One speedscope sample per distinct stack, straight from the session (no tree), merged
    by identical path and in sorted order so the file is deterministic. ``ids``: speedscope frame
    index of each session function; ``mapped``: each stack's path in those indices and its sort
    key (``analysis.paths.path_keys``: equal where the paths are, ordered as they are), per view,
    made on first use and shared by the run's profile and every compile's (an empty path: the
    stack has no frames of the view)."""
    stacks = session.samples.stacks if session.samples is not None else []
    indices = range(len(stacks)) if frame is None else d.by_frame.get(frame, [])
    cats = d.categories if stacks else []
    if view not in mapped:
        if list(ids) == list(range(len(ids))):  # the usual case: each function is its own frame
            paths = [st.compiler if view == "compiler" else st.traced for st in stacks]
        else:
            frame_of = ids.__getitem__
            paths = [list(map(frame_of, st.compiler if view == "compiler" else st.traced)) for st in stacks]
        mapped[view] = (paths, path_keys(paths) or [tuple(p) for p in paths])
    paths, keys = mapped[view]
    chosen = list(indices)
    chosen_paths = [paths[i] for i in chosen]
    chosen_keys = [keys[i] for i in chosen]
    for j, path in enumerate(chosen_paths):
        if not path:  # no frames of the view: its synthetic frames stand for them
            path = chosen_paths[j] = [frames(StackNode(name, kind=SYNTHETIC))
                                      for name in empty_stack_names(view, cats[chosen[j]])]
            packed = path_keys([path]) if type(chosen_keys[j]) is bytes else None  # keys of one kind
            chosen_keys[j] = packed[0] if packed is not None else tuple(path)
    # by path (the keys sort as the paths do; stable: equal paths merge in stack order)
    order = sorted(range(len(chosen)), key=chosen_keys.__getitem__)
    samples: list[list[int]] = []
    weights: list[float] = []
    last: Any = None
    for j in order:
        key = chosen_keys[j]
        if weights and key == last:
            weights[-1] += stacks[chosen[j]].seconds
        else:
            samples.append(chosen_paths[j])
            weights.append(0.0 + stacks[chosen[j]].seconds)
            last = key
    return samples, weights


Profile = tuple[str, list[list[int]], list[float]]


def _document_parts(
    session: Session, max_frames: int | None, derived: Derived | None
) -> tuple[dict[str, Any], list[dict[str, Any]], list[Profile]]:
    """The speedscope file's head (before "shared"), its frame table and its profiles, each
    (name, samples, weights)."""
    frames = _Frames()
    d = derived or Derived(session)
    ids = [frames(StackNode(f.name, f.filename, f.lineno, f.kind)) for f in session.functions]
    profiles: list[Profile] = []
    mapped: dict[View, tuple[list[list[int]], list[Any]]] = {}
    sampled_views: tuple[View, ...] = ("compiler", "traced")
    for view in sampled_views:
        profiles.append((f"all compiles: {_VIEW_NAMES[view]}",
                         *_stack_samples(session, view, None, d, frames, ids, mapped)))
    if session.inline_profile:
        tree = build_tree(session, "inline", derived=d)
        profiles.append((f"all compiles: {_VIEW_NAMES['inline']}", *_tree_samples(tree, frames)))
    keys = frames_with_samples(session, max_frames, d)
    if len(keys) > 1:
        for key in keys:
            label = clean_text(root_label(session, key).name)
            for view in sampled_views:
                profiles.append((f"compile {label}: {_VIEW_NAMES[view]}",
                                 *_stack_samples(session, view, key, d, frames, ids, mapped)))
    target = clean_text(session.run.target) or "run"
    head = {
        "$schema": SCHEMA_URL,
        "name": f"dynaprof: {target}",
        "exporter": f"dynaprof {session.run.dynaprof_version}",
        "activeProfileIndex": 0,
    }
    return head, frames.frames, profiles


def speedscope_document(
    session: Session, max_frames: int | None = None, derived: Derived | None = None
) -> dict[str, Any]:
    """The speedscope file as a JSON-ready dict."""
    head, frames, profiles = _document_parts(session, max_frames, derived)
    return {**head, "shared": {"frames": frames}, "profiles": [_profile(*p) for p in profiles]}


def speedscope_json(session: Session, max_frames: int | None = None, derived: Derived | None = None) -> str:
    """``json.dumps(speedscope_document(...))``, the same text, with the samples (every stack's
    path: millions of indices in a big session) written as their ``repr`` (lists of ints: the
    encoder's text) instead of through the encoder; the rest goes through ``json.dumps`` piece
    by piece."""
    head, frames, profiles = _document_parts(session, max_frames, derived)
    dumps = json.dumps
    parts = [dumps(head)[:-1], ', "shared": {"frames": ', dumps(frames), '}, "profiles": [']
    for n, (name, samples, weights) in enumerate(profiles):
        text = repr(samples) if _int_lists(samples) else dumps(samples)
        parts += [", " if n else "", '{"type": "sampled", "name": ', dumps(name),
                  ', "unit": "seconds", "startValue": 0, "endValue": ', dumps(sum(weights)),
                  ', "samples": ', text, ', "weights": ', dumps(weights), "}"]
    parts.append("]}")
    return "".join(parts)


def render_speedscope(ctx: RenderContext) -> Files:
    """``speedscope.json`` (``speedscope.json.gz`` with ``exports="gzip"``: speedscope opens it
    as is, it inflates compressed files on import; nothing with ``exports="none"``)."""
    mode = ctx.options.exports
    if mode == "none":
        return {}
    text = speedscope_json(ctx.session, ctx.options.max_frame_graphs, ctx.derived)
    if mode in ("gzip", "auto"):
        return {f"speedscope.json{SUFFIX}": gzip_later(lambda: _pieces(text + "\n"), SPEEDSCOPE_LEVEL)}
    return {"speedscope.json": text + "\n"}


def _int_lists(samples: list[list[int]]) -> bool:
    """Whether ``samples`` are lists of plain ints, whose ``repr`` is ``json.dumps``'s very text
    (made at C speed; checked at C speed too: a session built by hand may hold other types)."""
    return set(map(type, samples)) <= {list} and set(map(type, itertools.chain.from_iterable(samples))) <= {int}


def _pieces(text: str, size: int = 1 << 20) -> Iterator[str]:
    """``text`` in slices, so compressing it needs no second full-size copy."""
    for i in range(0, len(text), size):
        yield text[i : i + size]
