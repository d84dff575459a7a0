"""``config.dynamo_profiler`` + ``DynamoProfilerState.dump_stats`` (2.13): torch's own per-inline
tracing times, captured silently (``--inline-profile``)."""

from __future__ import annotations

import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_dynamo_profiler(recorder: CompileRecorder) -> None:
    config = _private("torch._dynamo.config")
    dp = _private("torch._dynamo.dynamo_profiler")

    if config.dynamo_profiler:
        recorder.warn("TORCH_COMPILE_DYNAMO_PROFILER is set: leaving torch's profiler output as it is")
        return

    def dump_stats(state: Any, output_file: Any = None) -> None:
        timings = list(getattr(state, "timings", []))
        state.timings.clear()
        if timings:
            emit_inline(recorder, timings)

    dp.DynamoProfilerState.dump_stats = dump_stats
    config.dynamo_profiler = True
    recorder.own_config.add(("dynamo", "dynamo_profiler"))


def emit_inline(recorder: CompileRecorder, timings: list[Any]) -> None:
    """An ``inline`` record: torch's per-inline tracing times, summed per traced call path."""
    tid = threading.get_ident()
    agg: dict[tuple[int, ...], list[float]] = {}
    for t in timings:
        path = [recorder.table.key_id((str(n), str(f), int(ln), "traced")) for (n, f, ln) in t.call_stack]
        path.append(recorder.table.key_id((str(t.func_name), str(t.filename), int(t.firstlineno), "traced")))
        cur = agg.setdefault(tuple(path), [0, 0.0])
        cur[0] += 1
        cur[1] += t.tottime_ns / 1e9
    recorder.emit_functions()
    key = recorder._key_of(None, tid)
    recorder.emit({"t": "inline", "key": key, "items": [[list(p), int(v[0]), round(v[1], 9)] for p, v in agg.items()]})
