"""Folded stacks (Brendan Gregg's ``a;b;c <value>`` format) for flamegraph.pl, inferno,
speedscope and friends.

``stacks-compiler.folded`` and ``stacks-traced.folded``: one line per call path with self time;
the value is **self time in integer microseconds** (wall-time weighted, like every dynaprof
graph), not a sample count. Frames are ``function (short/file.py:line)``; ``;`` inside names is
written as ``,``. ``dynaprof.analysis.stacks.parse_folded`` / ``tree_from_folded`` read them back.
The command line writes them gzip-compressed by default (``stacks-compiler.folded.gz``;
``--exports plain`` for the text, ``--exports none`` for neither).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from dynaprof.analysis.derived import Derived
from dynaprof.analysis.stacks import (
    StackNode,
    View,
    empty_stack_names,
    folded_label,
)
from dynaprof.model.session import Session
from dynaprof.render.base import Files, RenderContext
from dynaprof.render.gz import SUFFIX, gzip_later

FOLDED_VIEWS: tuple[View, ...] = ("compiler", "traced")

#: lines per chunk handed to the compressor
_CHUNK_LINES = 2000

Path = tuple[str, ...]


def _order_is_tuple_order(labels: set[str]) -> bool:
    """Whether sorting paths as tuples of labels gives the order of their ``;``-joined text.

    It does unless some label is a proper prefix of another one that goes on with a character
    sorting before ``;`` (e.g. ``f`` and ``f x``: ``"f;g" > "f x"`` but ``("f", "g") < ("f x",)``).
    Labels that start with a label follow it directly in sorted order, so one pass finds them."""
    ordered = sorted(labels)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if not b.startswith(a):
                break
            if b[len(a)] < ";":
                return False
    return True


def folded_paths(
    session: Session, view: View = "compiler", frame: str | None = None, *, categories: Sequence[str] | None = None,
    derived: Derived | None = None,
) -> list[tuple[Path, float]]:
    """(frames, seconds) per distinct call path, in the order of the path text.

    Paths are tuples of the functions' (shared) label strings, merged exactly when their joined
    text is equal (labels hold no ``;``), and summed in stack order, so the result is what
    grouping by the joined text gives, without making that text (about 3 KB per stack on
    Dynamo's deep stacks) for every stack at once."""
    if view not in FOLDED_VIEWS:
        raise ValueError(f"folded stacks exist for {', '.join(FOLDED_VIEWS)}, not {view!r}")
    if session.samples is None:
        return []
    d = derived or Derived(session)
    cats = d.categories if categories is None else categories
    labels = [folded_label(StackNode(f.name, f.filename, f.lineno, f.kind)) for f in session.functions]
    label_of = labels.__getitem__
    stacks = session.samples.stacks
    indices = range(len(stacks)) if frame is None else d.by_frame.get(frame, [])
    agg: dict[Path, float] = {}
    get = agg.get
    compiler = view == "compiler"
    no_stack: Path = empty_stack_names("compiler", "")
    used = {*labels, *no_stack}  # every label a path may hold (a superset is fine)
    for i in indices:
        st = stacks[i]
        ids = st.compiler if compiler else st.traced
        if ids:
            path: Path = tuple(map(label_of, ids))
        elif compiler:
            path = no_stack
        else:
            path = empty_stack_names(view, cats[i])
            used.update(path)
        agg[path] = get(path, 0.0) + st.seconds
    if _order_is_tuple_order(used):
        return sorted(agg.items())
    return sorted(agg.items(), key=lambda item: ";".join(item[0]))  # as the text sorts


def folded_chunks(
    session: Session, view: View = "compiler", frame: str | None = None, *, categories: Sequence[str] | None = None,
    derived: Derived | None = None,
) -> Iterator[str]:
    """The folded-stack text of one view in pieces (joined, they are :func:`folded_text`)."""
    lines: list[str] = []
    for path, secs in folded_paths(session, view, frame, categories=categories, derived=derived):
        us = round(secs * 1e6)
        if us > 0:
            lines.append(f"{';'.join(path)} {us}\n")
            if len(lines) >= _CHUNK_LINES:
                yield "".join(lines)
                lines.clear()
    if lines:
        yield "".join(lines)


def folded_text(
    session: Session, view: View = "compiler", frame: str | None = None, *, categories: Sequence[str] | None = None,
    derived: Derived | None = None,
) -> str:
    """Folded-stack text of one view (values in microseconds); empty when nothing was sampled.

    Built straight from the stacks (no tree), linear in the sampled data; lines are sorted for
    deterministic output."""
    return "".join(folded_chunks(session, view, frame, categories=categories, derived=derived))


def render_folded(ctx: RenderContext) -> Files:
    mode = ctx.options.exports
    if mode == "none":
        return {}
    ctx.derived.categories  # noqa: B018 - worked out here, before the background threads share it
    files: Files = {}
    for view in FOLDED_VIEWS:
        if mode == "auto" and view == "compiler":
            samples = ctx.session.samples
            frames = sum(len(st.compiler) for st in samples.stacks) if samples is not None else 0
            if frames > ctx.options.auto_folded_max_frames:
                ctx.notes.append(
                    f"stacks-compiler.folded.gz not written: {frames:,} sampled compiler frames make it the "
                    "largest file of the run by far; `dynaprof report --exports gzip RUN` writes it"
                )
                continue
        if mode in ("gzip", "auto"):  # made and compressed in the background, beside the next renderers

            def chunks(view: View = view) -> Iterator[str]:
                return folded_chunks(ctx.session, view, derived=ctx.derived)

            files[f"stacks-{view}.folded{SUFFIX}"] = gzip_later(chunks)
        else:
            files[f"stacks-{view}.folded"] = folded_text(ctx.session, view, derived=ctx.derived)
    return files
