"""``trace.json``: the run's compile phases as Chrome trace events (Perfetto, chrome://tracing).

One process (the profiled run), one track per thread. Each compiled frame is a complete
(``X``) event from its start to the end of its compile, its discarded attempts and Dynamo's
timed spans nested inside it; the run-level spans (the script itself) enclose them. Torch's
spans come from several clocks and may overlap their parent by a hair, and trace viewers draw
garbage for events that are not well nested, so every thread's events are made strictly nested
here: children are clipped to their parent's bounds and events left with no duration are
dropped. Timestamps are microseconds from the run's start (rounded to the nanosecond before
nesting, so the output is exactly nested).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from dynaprof import fmt
from dynaprof.analysis import how_made
from dynaprof.model.session import CompiledFrame, Session
from dynaprof.render.base import Files, RenderContext
from dynaprof.render.output_names import TRACE_JSON

#: nesting precedence at equal bounds: lower levels enclose higher ones
LEVEL_RUN, LEVEL_FRAME, LEVEL_ATTEMPT, LEVEL_SPAN = 0, 1, 2, 3


@dataclass
class Interval:
    name: str
    start_us: float
    end_us: float
    tid: int
    level: int
    cat: str
    args: dict[str, Any] = field(default_factory=dict)


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def nest(intervals: list[Interval]) -> list[Interval]:
    """Make the intervals of one thread strictly nested: sort by start (longer and lower-level
    first), clip each to the innermost open interval containing its start, drop empty ones."""
    ordered = sorted(intervals, key=lambda i: (i.start_us, -i.end_us, i.level, i.name))
    out: list[Interval] = []
    open_: list[Interval] = []
    for iv in ordered:
        while open_ and open_[-1].end_us <= iv.start_us:
            open_.pop()
        end = min(iv.end_us, open_[-1].end_us) if open_ else iv.end_us
        if end <= iv.start_us:
            continue
        kept = Interval(iv.name, iv.start_us, end, iv.tid, iv.level, iv.cat, iv.args)
        if end < iv.end_us:
            kept.args = {**iv.args, "clipped_us": round(iv.end_us - end, 3)}
        out.append(kept)
        open_.append(kept)
    return out


def _frame_end(f: CompiledFrame) -> float | None:
    if f.compile_time_s is not None:
        return f.start_s + f.compile_time_s
    ends = [s.start_s + s.duration_s for s in f.spans]
    ends += [a.start_s + a.duration_s for a in f.attempts if a.start_s is not None and a.duration_s is not None]
    return max(ends) if ends else None


def frame_intervals(f: CompiledFrame) -> list[Interval]:
    """The frame's own event plus its attempts and spans, clipped to the frame's bounds."""
    end = _frame_end(f)
    out: list[Interval] = []
    lo, hi = _us(f.start_s), _us(end) if end is not None else None
    if hi is not None and hi > lo:
        args: dict[str, Any] = {
            "compile_id": f.compile_id, "trace_id": f.trace_id, "frame": f.name,
            "location": fmt.location(f.filename, f.lineno), "status": f.status, "restarts": f.restarts,
            "guards": f.guard_count, "graph_breaks": f.graph_breaks,
        }
        if f.restart_reasons:
            args["restart_reasons"] = [fmt.one_line(r, 300) for r in f.restart_reasons]
        if f.recompile_reason:
            args["recompile_reason"] = fmt.one_line(f.recompile_reason, 300)
        if f.fail_reason:
            args["fail_reason"] = fmt.one_line(f.fail_reason, 300)
        out.append(Interval(f"{f.trace_id} {fmt.one_line(f.name, 80)}", lo, hi, f.thread, LEVEL_FRAME, "compile",
                            args))

    def clip(a: float, b: float) -> tuple[float, float]:
        if hi is None:
            return a, b
        return max(a, lo), min(b, hi)

    if f.restarts:
        for a in sorted(f.attempts, key=lambda a: a.index):
            if a.start_s is None or a.duration_s is None:
                continue
            s, e = clip(_us(a.start_s), _us(a.start_s + a.duration_s))
            final = a.index >= f.restarts
            name = f"attempt {a.index}" + ("" if final else " (restarted)")
            out.append(Interval(name, s, e, f.thread, LEVEL_ATTEMPT, "attempt",
                                {"compile_id": f.compile_id, "attempt": a.index, "discarded": not final}))
    for sp in f.spans:
        s, e = clip(_us(sp.start_s), _us(sp.start_s + sp.duration_s))
        args = {"compile_id": f.compile_id, **{k: _jsonable(v) for k, v in sorted(sp.args.items())}}
        out.append(Interval(fmt.one_line(sp.name, 120), s, e, sp.thread, LEVEL_SPAN, "dynamo", args))
    return out


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else None
    return str(v)


def trace_events(session: Session) -> list[dict[str, Any]]:
    """All events: metadata first, then each thread's complete events in start order."""
    pid = session.run.pid or 1
    intervals = [Interval(fmt.one_line(sp.name, 120), _us(sp.start_s), _us(sp.start_s + sp.duration_s), sp.thread,
                          LEVEL_RUN, "run", {k: _jsonable(v) for k, v in sorted(sp.args.items())})
                 for sp in session.spans]
    for f in session.frames:
        intervals += frame_intervals(f)
    by_tid: dict[int, list[Interval]] = {}
    for iv in intervals:
        by_tid.setdefault(iv.tid, []).append(iv)
    names: dict[int, str] = {}
    for f in session.frames:
        names.setdefault(f.thread, f.thread_name)
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": pid, "tid": 0, "name": "process_name",
         "args": {"name": f"dynaprof: {fmt.one_line(how_made.script_path(session.run), 120)}"}},
    ]
    for i, tid in enumerate(sorted(by_tid)):
        label = names.get(tid) or f"thread {tid}"
        events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": label}})
        events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": i}})
    for tid in sorted(by_tid):
        for iv in nest(by_tid[tid]):
            events.append({"name": iv.name, "cat": iv.cat, "ph": "X", "ts": iv.start_us,
                           "dur": round(iv.end_us - iv.start_us, 3), "pid": pid, "tid": tid, "args": iv.args})
    return events


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float (a hand-edited or fuzzed session can hold one) as
    None: JSON has no Infinity, and a trace viewer rejects the whole file for one."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _drawable(event: dict[str, Any]) -> bool:
    """An event a viewer can place: finite start and duration (metadata events have neither)."""
    return all(not isinstance(event.get(k), float) or math.isfinite(event[k]) for k in ("ts", "dur"))


def chrome_trace(session: Session, finite: bool = True) -> dict[str, Any]:
    """The trace file as a JSON-ready dict; ``finite=False``: non-finite floats left as they are
    (for a caller that checks for them more cheaply, as ``render_chrome_trace`` does)."""
    r = session.run
    events = [e for e in trace_events(session) if _drawable(e)]
    return {
        "traceEvents": [_finite(e) for e in events] if finite else events,
        "displayTimeUnit": "ms",
        "otherData": {"target": r.target, "start_time": r.start_time, "torch": r.torch_version or "?",
                      "python": r.python_version, "dynaprof": r.dynaprof_version},
    }


def _dumps(trace: dict[str, Any]) -> str:
    return json.dumps(trace, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"


def render_chrome_trace(ctx: RenderContext) -> Files:
    trace = chrome_trace(ctx.session, finite=False)
    try:  # nearly always: no non-finite float, and the encoder's own check is cheaper than _finite's walk
        text = _dumps(trace)
    except ValueError:  # one somewhere (allow_nan=False refused it): null, as _finite makes it
        trace["traceEvents"] = [_finite(e) for e in trace["traceEvents"]]
        text = _dumps(trace)
    return {TRACE_JSON: text}
