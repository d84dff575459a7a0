"""The calls of each compiled graph: ``decorators.disable`` as ``OutputGraph.compile_and_call_fx_graph``
calls it on the backend's compiled graph. The graph is wrapped, inside torch's own ``disable``
wrapper (so Dynamo never traces the counter), with a counter of its calls (and with
``--time-calls`` a timer), keyed by the frame compile. ``CompileRecorder.call_counts`` sums them
at the end."""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def _counted(fn: Callable[..., Any], counters: list[list[int]]) -> Callable[..., Any]:
    """``fn`` with a count of its calls in a new cell appended to ``counters``."""
    cell = [0]
    counters.append(cell)

    def counted(*args: Any, **kwargs: Any) -> Any:
        cell[0] += 1
        return fn(*args, **kwargs)

    return counted


#: durations kept per graph for the median (the total counts every call)
MAX_TIMED_CALLS = 100_000


def _timed(fn: Callable[..., Any], counters: list[list[int]]) -> Callable[..., Any]:
    """``fn`` counted and timed: a new cell ``[calls, total ns, first durations ns...]``."""
    cell = [0, 0]
    counters.append(cell)
    clock = time.perf_counter_ns
    keep = MAX_TIMED_CALLS + 2

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            d = clock() - t
            cell[0] += 1
            cell[1] += d
            if len(cell) < keep:
                cell.append(d)

    return timed



def install_calls(recorder: CompileRecorder) -> None:
    decorators = _private("torch._dynamo.decorators")
    og = _private("torch._dynamo.output_graph")
    target = inspect.unwrap(og.OutputGraph.compile_and_call_fx_graph).__code__
    orig = decorators.disable

    @functools.wraps(orig)
    def disable(fn: Any = None, *a: Any, **k: Any) -> Any:
        # compile_and_call_fx_graph imports ``disable`` at each call (2.13): wrap only its graph
        if fn is not None and callable(fn) and sys._getframe(1).f_code is target:
            win = recorder.current(threading.get_ident())
            if win is not None:
                counters = recorder.call_counters.setdefault(win.key, [])
                fn = _timed(fn, counters) if recorder.time_calls else _counted(fn, counters)
        return orig(fn, *a, **k)

    decorators.disable = disable
    if getattr(og, "disable", None) is orig:  # a torch that imports it at module level
        og.disable = disable
