"""Repeated runs (``dynaprof run --repeat N``): the median and spread of their compile times, and
which one the report is drawn from. Pure: reads ``Session.repeats``."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from dynaprof import fmt
from dynaprof.analysis.causes import axes
from dynaprof.fmt import stored_s
from dynaprof.model.session import CompiledFrame, Repeat, Session


def median(values: Sequence[float]) -> float:
    """The median (the mean of the two middle values for an even count); ValueError when empty."""
    if not values:
        raise ValueError("median of no values")
    xs = sorted(values)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def median_repeat(compile_s: Sequence[float]) -> int:
    """The index (0-based) of the run to draw the report from: the one whose compile time is the
    median, the lower middle for an even count (a real run, never an average), the first on ties."""
    if not compile_s:
        raise ValueError("no repeats")
    order = sorted(range(len(compile_s)), key=lambda i: (compile_s[i], i))
    return order[(len(order) - 1) // 2]


def make_repeat(index: int, session: Session, cold: bool) -> Repeat:
    """What a session of one run keeps of another: its totals, per-frame compile times, phases,
    sampled seconds per cause (the cause x phase view, derived here from its samples) and when it
    started."""
    phases: dict[str, float] = {}
    frames: list[CompiledFrame] = session.outermost_frames()
    for f in frames:
        for name, secs in f.phases.items():
            phases[name] = stored_s(phases.get(name, 0.0) + secs)
    view = session.axes if session.axes is not None else axes(session)[0]
    by_cause = {k: stored_s(v) for k, v in sorted(view.causes.items())} if view is not None else {}
    return Repeat(index, stored_s(session.total_compile_s), session.run.wall_s, session.run.exit_status, cold,
                  {f.key: f.compile_time_s for f in session.frames}, dict(sorted(phases.items())), by_cause,
                  session.run.start_time or None)


def combine(sessions: Sequence[Session], cold: bool) -> Session:
    """One session of repeated runs (``dynaprof run --repeat N``): the median run's, holding every
    run's totals (``repeats``)."""
    reps = [make_repeat(i, s, cold) for i, s in enumerate(sessions, 1)]
    at = median_repeat([r.compile_s for r in reps])
    chosen = sessions[at]
    chosen.repeats = reps
    chosen.run.repeat = reps[at].index
    return chosen


def pool(sessions: Sequence[Session]) -> Session:
    """Several runs of one side (``dynaprof compare --base A1 A2 --new B1 B2``: single runs, or runs
    made with ``--repeat``) as one session of repeated runs: every run's totals in ``repeats``, the
    frames and samples of the run whose compile time is nearest the pooled median. Runs made one at a
    time, alternating with the other side's, cancel a machine's drift that a block of repeats
    cannot. The inputs are not changed."""
    if not sessions:
        raise ValueError("no runs to pool")
    if len(sessions) == 1:
        return sessions[0]
    reps: list[Repeat] = []
    own: list[int] = []  # the index in ``reps`` of each session's own (drawn) run
    for s in sessions:
        if s.repeats:
            drawn = next((k for k, r in enumerate(s.repeats) if r.index == s.run.repeat), 0)
            own.append(len(reps) + drawn)
            reps += s.repeats
        else:
            own.append(len(reps))
            reps.append(make_repeat(0, s, cold=False))  # a single run used the caches as they were
    reps = [dataclasses.replace(r, index=i) for i, r in enumerate(reps, 1)]
    mid = median([r.compile_s for r in reps])
    at = min(range(len(sessions)), key=lambda k: (abs(reps[own[k]].compile_s - mid), k))
    out = copy.copy(sessions[at])
    out.run = dataclasses.replace(out.run, repeat=own[at] + 1)
    out.repeats = reps
    return out


@dataclass(frozen=True)
class RepeatStats:
    count: int
    cold: bool
    median_s: float
    min_s: float
    max_s: float
    drawn_from: int | None  # 1-based, the repeat the report shows

    @property
    def spread(self) -> float | None:
        """(max - min) / median; None when the median is 0."""
        return (self.max_s - self.min_s) / self.median_s if self.median_s > 0 else None


def repeat_stats(session: Session) -> RepeatStats | None:
    """The repeats' compile-time median and range; None for a single run."""
    reps = session.repeats
    if len(reps) < 2:
        return None
    times = [r.compile_s for r in reps]
    return RepeatStats(len(reps), all(r.cold for r in reps), median(times), min(times), max(times),
                       session.run.repeat)


def repeat_summary(session: Session) -> str | None:
    """``5 repeats, cold caches: compile median 1.23 s (1.10 s - 1.40 s, spread 24%); report from
    repeat 3 (the median)``; None for a single run."""
    st = repeat_stats(session)
    if st is None:
        return None
    spread = f", spread {st.spread:.0%}" if st.spread is not None else ""
    drawn = f"; report from repeat {st.drawn_from} (the median)" if st.drawn_from is not None else ""
    return (f"{st.count} repeats, {'cold' if st.cold else 'warm'} caches: compile median {fmt.seconds(st.median_s)} "
            f"({fmt.seconds(st.min_s)} - {fmt.seconds(st.max_s)}{spread}){drawn}")


def frame_medians(session: Session) -> dict[str, tuple[float, float, float, int]]:
    """Frame key -> (median, min, max, runs it compiled in) of its compile seconds over the repeats."""
    by_key: dict[str, list[float]] = {}
    for r in session.repeats:
        for key, secs in r.frames.items():
            if secs is not None:
                by_key.setdefault(key, []).append(secs)
    return {k: (median(v), min(v), max(v), len(v)) for k, v in sorted(by_key.items())}
