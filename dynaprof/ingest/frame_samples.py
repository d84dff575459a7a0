"""What a live run's samples say about its frames, worked out once the journal is read: samples
scaled down to the compile time they belong to, and attempts from the samples where torch did
not time them. Only the journal path has samples (a TORCH_TRACE log holds none)."""

from __future__ import annotations

from dynaprof.fmt import plural, stored_s
from dynaprof.model.session import Attempt, CompiledFrame, Stack, outermost_frames


def clip_samples(frames: list[CompiledFrame], stacks: list[Stack]) -> list[str]:
    """Scale each frame's samples down to its ``compile_time_s`` where they add up to more (the
    sampler's clock and torch's differ; busy threads stretch sampling intervals): attributed
    seconds never exceed the compile they belong to. Returns a note per clipped run."""
    by_frame: dict[str, list[Stack]] = {}
    for st in stacks:
        if st.frame is not None:
            by_frame.setdefault(st.frame, []).append(st)
    clipped: list[tuple[str, float]] = []
    for f in frames:
        mine = by_frame.get(f.key, [])
        sampled = sum(st.seconds for st in mine)
        if f.compile_time_s is None or sampled <= f.compile_time_s or sampled <= 0:
            continue
        scale = f.compile_time_s / sampled
        for st in mine:
            st.seconds = round(st.seconds * scale, 9)
        f.sampled_clipped_s = stored_s(sampled - f.compile_time_s)
        clipped.append((f.trace_id, f.sampled_clipped_s))
    notes = []
    if clipped:
        total = sum(s for _, s in clipped)
        n = len(clipped)
        notes.append(
            f"sampled seconds of {plural(n, 'compile')} exceeded torch's compile time by {total * 1e3:.1f} ms in all "
            "and were scaled down to it: torch's timer (entire_frame_compile) leaves out some of its own work around "
            "it (logging the compile's start, recording its metrics), which the sampler sees; attributed seconds "
            "never exceed a frame's compile time"
        )
    # samples no frame claims (and nested compiles) must not push the run past its compile time
    budget = sum(f.compile_time_s or 0.0 for f in outermost_frames(frames))
    sampled = sum(st.seconds for st in stacks)
    if frames and sampled > budget * 1.0001 + 1e-6 and budget > 0:
        scale = budget / sampled
        for st in stacks:
            st.seconds = round(st.seconds * scale, 9)
        notes.append(
            f"sampled seconds exceeded the run's compile time ({budget * 1e3:.1f} ms) by "
            f"{(sampled - budget) * 1e3:.1f} ms "
            "(samples no compile window claimed, or compiles nested in others) and were scaled down to it"
        )
    return notes


def sampled_attempts(f: CompiledFrame, stacks: list[Stack]) -> list[Attempt]:
    """Attempts from the samples (torch did not time them): sampled seconds per attempt index."""
    per: dict[int, float] = {}
    for st in stacks:
        if st.frame == f.key and st.attempt >= 0:
            per[st.attempt] = per.get(st.attempt, 0.0) + st.seconds
    if not per:
        return []
    return [Attempt(i, None, stored_s(per.get(i, 0.0)), "sampled") for i in range(max(f.restarts, max(per)) + 1)]
