"""What several outputs derive from one session's samples, each worked out once per render.

A ``Derived`` belongs to one render (``render.base.RenderContext.derived``): its values are
computed on first use and kept for that object's life only, so nothing outlives the render and
no cache is keyed by object identity. Functions that take ``derived=`` make a fresh one when
called without it (correct, just not shared).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from dynaprof.analysis.attribution import stack_categories
from dynaprof.analysis.causes import session_tables, stack_causes, stack_phases
from dynaprof.analysis.interpreter_frames import UserCallPaths, user_call_paths
from dynaprof.analysis.user_view import UserView, user_view
from dynaprof.model.session import FunctionRef, Session


@dataclass(frozen=True)
class FunctionTime:
    func: FunctionRef
    self_s: float
    inclusive_s: float


def traced_function_times(session: Session) -> list[FunctionTime]:
    """Self and inclusive sampled seconds per traced user function, heaviest self time first."""
    if session.samples is None:
        return []
    self_s: dict[int, float] = {}
    incl: dict[int, float] = {}
    for st in session.samples.stacks:
        if not st.traced:
            continue
        self_s[st.traced[-1]] = self_s.get(st.traced[-1], 0.0) + st.seconds
        for i in set(st.traced):
            incl[i] = incl.get(i, 0.0) + st.seconds
    out = [FunctionTime(session.functions[i], self_s.get(i, 0.0), v) for i, v in incl.items()]
    return sorted(out, key=lambda t: (-t.self_s, -t.inclusive_s, t.func.name, t.func.filename, t.func.lineno))


class Derived:
    def __init__(self, session: Session) -> None:
        self.session = session

    @cached_property
    def phases(self) -> list[str]:
        """The phase of each stack of ``session.samples.stacks`` (``causes.stack_phases``): the
        categories, the cause x phase axes and the user-code view all start from it."""
        return stack_phases(self.session)

    @cached_property
    def causes(self) -> list[tuple[str, str]]:
        """(cause, detail) of each stack of ``session.samples.stacks`` (``causes.stack_causes``)."""
        return stack_causes(self.session, session_tables(self.session), self.phases)

    @cached_property
    def categories(self) -> list[str]:
        """The colour key of each stack of ``session.samples.stacks`` (``attribution.stack_categories``)."""
        return stack_categories(self.session, self.phases, self.causes)

    @cached_property
    def user_view(self) -> UserView:
        """The whole-pipeline user-code view of every stack (``analysis.user_view``)."""
        return user_view(self.session, self.phases)

    @cached_property
    def user_calls(self) -> UserCallPaths:
        """Every compiler stack as the user calls Dynamo traced (``analysis.interpreter_frames``), for drawing."""
        return user_call_paths(self.session)

    @cached_property
    def traced_times(self) -> list[FunctionTime]:
        """Sampled seconds per traced user function (``traced_function_times``)."""
        return traced_function_times(self.session)

    @cached_property
    def by_frame(self) -> dict[str, list[int]]:
        """Indices of ``session.samples.stacks`` per frame key (drawing one graph per frame stays
        linear in the number of stacks)."""
        index: dict[str, list[int]] = {}
        if self.session.samples is not None:
            for i, st in enumerate(self.session.samples.stacks):
                if st.frame is not None:
                    index.setdefault(st.frame, []).append(i)
        return index

    @cached_property
    def frame_seconds(self) -> dict[str, float]:
        """Sampled seconds per frame key, summed in stack order (``stacks.frames_with_samples``,
        asked a few times a render)."""
        stacks = self.session.samples.stacks if self.session.samples is not None else []
        return {k: sum(stacks[i].seconds for i in idx) for k, idx in self.by_frame.items()}

    @cached_property
    def sampled_frames(self) -> list[str]:
        """Keys of the frames with sampled time, in session order (``stacks.frames_with_samples``)."""
        seconds = self.frame_seconds
        return [f.key for f in self.session.frames if seconds.get(f.key, 0.0) > 0]
