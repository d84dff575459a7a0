"""The whole-pipeline user-code view: every sampled second on the user code it was spent for.

While Dynamo traces, a sample sits on its traced user stack (``Stack.traced``), as before. Every
other sample (AOT autograd, Inductor, kernel compile, guards, setup) sits on the user frames of its
*cause* (``dynaprof.analysis.causes``): the compiled frame's root function, then the cause as a
child frame (``Linear.weight via Parametrization``, ``forward (model.py:26)``, ``[whole graph]``),
then the phase as a leaf (``[C++/Triton kernel compile]``). Dynamo calls the backend from inside its
translator loop, so a backend sample's traced stack only says where tracing stopped: the cause
replaces it. Each path carries its sample's phase, which the flamegraph colours by.

Pure, like ``attribution.stack_categories``; a render computes it once (``analysis.derived``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dynaprof.analysis import causes
from dynaprof.analysis.keys import Key, KeyTable
from dynaprof.model.session import (
    CAUSE_PARAMETRIZATION,
    PHASE_LABELS,
    UNNAMED_CAUSES,
    Session,
)

#: kind of the cause frames this view adds
CAUSE_KIND = "cause"


@dataclass(frozen=True)
class UserView:
    """Per stack of ``session.samples.stacks``: its path (indices into ``keys``, root first; the
    session's functions come first, then the frames this view adds) and its phase."""

    paths: list[tuple[int, ...]]
    keys: list[Key]
    phases: list[str]


def cause_frame_label(cause: str, detail: str) -> str:
    """The cause frame's text: the parametrization's detail, the user code, or a bracketed
    ``[whole graph]`` / ``[unknown (no provenance)]``."""
    if cause == CAUSE_PARAMETRIZATION:
        return detail
    if cause in UNNAMED_CAUSES:
        return f"[{cause}]"
    return cause


def phase_frame_label(phase: str) -> str:
    return f"[{PHASE_LABELS.get(phase, phase)}]"


def user_view(session: Session, phases: Sequence[str] | None = None) -> UserView:
    """The view of every sampled stack (empty without samples). Pure: a render works it out once
    (``analysis.derived.Derived.user_view``)."""
    if session.samples is None:
        return UserView([], [], [])
    return _build(session, causes.stack_phases(session) if phases is None else list(phases))


def _build(session: Session, phases: list[str]) -> UserView:
    assert session.samples is not None
    stacks = session.samples.stacks
    funcs = session.functions
    t = causes.tables(funcs)
    table = KeyTable(funcs)
    keys, key_id = table.keys, table.id

    # the compiled frame's root: its heaviest traced root function (so backend time sits beside the
    # tracing of the same code), else the frame's own code
    weight: dict[str, dict[int, float]] = {}
    for st in stacks:
        if st.frame is not None and st.traced:
            acc = weight.setdefault(st.frame, {})
            acc[st.traced[0]] = acc.get(st.traced[0], 0.0) + st.seconds
    roots: dict[str, int] = {}
    for f in session.frames:
        w = weight.get(f.key, {})
        roots[f.key] = (max(sorted(w), key=w.__getitem__) if w
                        else key_id((f.name, f.filename, f.lineno, "traced")))
    paths: list[tuple[int, ...]] = []
    owner: tuple[str, str] | None = None  # the toolchain setup's cause, worked out where needed
    for st, phase in zip(stacks, phases, strict=True):
        if st.traced and phase not in causes.BACKEND_PHASES:
            paths.append(tuple(st.traced))
            continue
        if phase == "toolchain_setup":
            owner = owner or causes.toolchain_owner(stacks, phases, t)
            cause, detail = owner
        else:
            cause, detail = causes.stack_cause(st, t, phase)
        tail = (key_id((cause_frame_label(cause, detail), "", 0, CAUSE_KIND)),
                key_id((phase_frame_label(phase), "", 0, "synthetic")))
        root = roots.get(st.frame) if st.frame is not None else None
        paths.append(tail if root is None else (root, *tail))
    return UserView(paths, keys, phases)
