"""Attribution: the one breakdown of sampled compile time, stored in the session.

Every sampled second has two coordinates, worked out in ``dynaprof.analysis.causes``: the phase the
compiler was in and the cause (the user code it worked for). ``attribution`` is the phase axis
summed into ``PHASE_GROUPS`` (the cause x phase table's columns), so ``attribution[group]`` is
exactly the seconds of the phases in that group, whatever their cause; ``axes`` holds both axes.
Restarts and parametrizations are causes and waste, not phases: see ``Axes.restart_waste`` and
``Axes.causes``. docs/attribution.md describes the rules for users.

Derived data is computed once per command, where a session is built or loaded and before anything
is rendered: ``run_folder.writer`` (through ``dynaprof.pipeline``) applies :func:`apply_attribution`
for ``run``, ``report`` and ``dynaprof.profile()``, classifying each stack once for it and for the
renderers; neither capture nor ingest does. The result is stored in session.json, which ``check``,
``compare`` and other tools read; a re-render in place rewrites that file only when the derived data
came out different (new rules) or it is of an older schema. What a render derives from the samples
beyond this is ``analysis.derived.Derived``, kept for that render only.
"""

from __future__ import annotations

from collections.abc import Sequence

from dynaprof.analysis import causes
from dynaprof.fmt import stored_s
from dynaprof.model.session import CATEGORIES, CAUSE_PARAMETRIZATION, GROUP_OF, Axes, Session, Stack

#: the colour key of a second spent for a parametrization, whatever its phase: the pictures show the
#: cause the product is about in one colour, and the rest by phase group
PARAMETRIZATION_COLOUR = CAUSE_PARAMETRIZATION


def stack_group(stack: Stack, tables: causes.Tables) -> str:
    """The phase group of one stack (``GROUP_OF`` of its phase)."""
    return GROUP_OF[causes.stack_phase(stack, tables)]


def stack_categories(session: Session, phases: Sequence[str] | None = None,
                     stack_causes: Sequence[tuple[str, str]] | None = None) -> list[str]:
    """The colour key of each stack in ``session.samples.stacks`` (same order): ``parametrization``
    for a second spent for one (``Axes.causes``), else its phase group. Pure: a render works it out
    once (``analysis.derived.Derived``); ``phases`` / ``stack_causes``: what the caller has of
    ``causes.stack_phases`` / ``causes.stack_causes``."""
    if session.samples is None:
        return []
    phase_of = causes.stack_phases(session) if phases is None else phases
    if stack_causes is None:
        stack_causes = causes.stack_causes(session, causes.session_tables(session), phase_of)
    return [PARAMETRIZATION_COLOUR if c == CAUSE_PARAMETRIZATION else GROUP_OF[p]
            for p, (c, _) in zip(phase_of, stack_causes, strict=True)]


def empty_attribution() -> dict[str, float]:
    return dict.fromkeys(CATEGORIES, 0.0)


def group_seconds(ax: Axes | None) -> dict[str, float]:
    """Seconds per phase group (every group present) from the cause x phase matrix: the sums the
    cause x phase table prints as its column totals."""
    out = empty_attribution()
    for phase, row in (ax.matrix if ax is not None else {}).items():
        out[GROUP_OF.get(phase, "other")] += sum(row.values())
    return {k: stored_s(v) for k, v in out.items()}


def apply_attribution(
    session: Session, phases: Sequence[str] | None = None, stack_causes: Sequence[tuple[str, str]] | None = None
) -> None:
    """Store the cause x phase view (``axes``) and its phase-group sums (``attribution``) in the
    session, for the run and each frame. The one place derived data is put into a session: every
    command calls it once, where a session is built or loaded, before rendering. ``phases`` /
    ``stack_causes``: what ``analysis.derived.Derived`` already holds, when the caller has it. The
    group sums come from the axes, so they equal the table's columns by construction."""
    if session.samples is None:
        session.attribution = {}
        session.axes = None
        for f in session.frames:
            f.attribution = {}
            f.axes = None
        return
    run_axes, frame_axes = causes.axes(session, phases, stack_causes)
    session.axes = run_axes
    session.attribution = group_seconds(run_axes)
    for f in session.frames:
        f.axes = frame_axes.get(f.key)
        f.attribution = group_seconds(f.axes) if f.axes is not None else empty_attribution()
