"""speedscope export (https://www.speedscope.app, file format
https://www.speedscope.app/file-format-schema.json).

``speedscope.json`` holds one "sampled" profile per view (compiler, traced, and inline when
Dynamo's profiler recorded inlines) and, when more than one compile has samples, a compiler and
a traced profile per compile. Samples are the tree's call paths with self time (aggregated, so
speedscope's "Time Order" view is not chronological); weights are seconds (``unit: "seconds"``).
"""

from __future__ import annotations

import json
from typing import Any

from dynaprof.analysis.attribution import stack_categories
from dynaprof.analysis.stacks import StackNode, View, build_tree, clean_text, display_name, frames_with_samples
from dynaprof.model.session import Session
from dynaprof.render.base import Files, RenderContext

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


def _profile(name: str, root: StackNode, frames: _Frames) -> dict[str, Any]:
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
    return {
        "type": "sampled",
        "name": name,
        "unit": "seconds",
        "startValue": 0,
        "endValue": sum(weights),
        "samples": samples,
        "weights": weights,
    }


def speedscope_document(session: Session) -> dict[str, Any]:
    """The speedscope file as a JSON-ready dict."""
    frames = _Frames()
    cats = stack_categories(session)
    profiles: list[dict[str, Any]] = []
    views: list[View] = ["compiler", "traced"]
    if session.inline_profile:
        views.append("inline")
    for view in views:
        tree = build_tree(session, view, categories=cats)
        profiles.append(_profile(f"all compiles: {_VIEW_NAMES[view]}", tree, frames))
    keys = frames_with_samples(session)
    if len(keys) > 1:
        for key in keys:
            for view in views[:2]:
                tree = build_tree(session, view, key, categories=cats)
                profiles.append(_profile(f"compile {clean_text(tree.name)}: {_VIEW_NAMES[view]}", tree, frames))
    target = clean_text(session.run.target) or "run"
    return {
        "$schema": SCHEMA_URL,
        "name": f"dynaprof: {target}",
        "exporter": f"dynaprof {session.run.dynaprof_version}",
        "activeProfileIndex": 0,
        "shared": {"frames": frames.frames},
        "profiles": profiles,
    }


def render_speedscope(ctx: RenderContext) -> Files:
    return {"speedscope.json": json.dumps(speedscope_document(ctx.session), indent=None, sort_keys=False) + "\n"}
