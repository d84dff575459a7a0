"""``utils.log_compilation_event``: the CompilationMetrics of each compile, as a ``metrics`` record
(its scalar fields, ``model.journal.Metrics``). A backward's (``is_forward=False``) go to that
backward compile, not to its forward frame."""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private
from dynaprof.model.journal import METRICS_DROP, METRICS_LISTS, Metrics, MetricValue


def current_attempt() -> int | None:
    """The attempt of the compile running on this thread (its restarts), where torch says."""
    try:
        trace_id = _private("torch._guards").CompileContext.current_trace_id()
    except Exception:
        return None
    attempt = getattr(trace_id, "attempt", None)
    return attempt if isinstance(attempt, int) else None


def scalar_metrics(m: Any) -> dict[str, MetricValue]:
    """A ``metrics`` record's ``m``: the fields a session may read (``model.journal.Metrics``)."""
    try:
        raw = dataclasses.asdict(m) if dataclasses.is_dataclass(m) and not isinstance(m, type) else dict(vars(m))
    except Exception:
        return {}
    out: dict[str, MetricValue] = {}
    for k, v in raw.items():
        if v is None or METRICS_DROP.search(k):
            continue
        if isinstance(v, (set, frozenset, list, tuple)):
            if k in METRICS_LISTS:
                items = [str(x)[:4000] for x in v][:50]
                out[k] = sorted(items) if isinstance(v, (set, frozenset)) else items
        elif isinstance(v, str):
            out[k] = v[:4000]
        elif isinstance(v, (bool, int, float)):
            out[k] = v
    return out



def install_metrics(recorder: CompileRecorder) -> None:
    du = _private("torch._dynamo.utils")

    orig = du.log_compilation_event

    @functools.wraps(orig)
    def log(metrics: Any, *a: Any, **k: Any) -> Any:
        try:
            if getattr(metrics, "is_runtime", None) is not True:  # run-time autotuning: no compile's
                emit_metrics(recorder, metrics)
        except Exception:
            pass
        return orig(metrics, *a, **k)

    du.log_compilation_event = log


def emit_metrics(recorder: CompileRecorder, metrics: Any) -> None:
    """The ``metrics`` record of one compile's CompilationMetrics, keyed by its window."""
    tid = threading.get_ident()
    cid = getattr(metrics, "compile_id", None)
    rec: Metrics = {"t": "metrics", "key": None, "m": scalar_metrics(metrics)}
    if getattr(metrics, "is_forward", None) is False and cid is not None:
        # a lazy backward compile's metrics (logged as its window closes): never its forward's;
        # without a window (no phase events) the record says whose they are
        rec["key"] = recorder._bw_key_by_cid.pop(str(cid), None)
        if rec["key"] is None:
            rec["kind"], rec["fwd"], rec["tid"] = "backward", recorder._key_by_cid.get(str(cid), str(cid)), tid
            start_us = getattr(metrics, "start_time_us", None)
            if isinstance(start_us, int):
                rec["ts"] = recorder.rel(start_us * 1000)
    else:
        rec["key"] = recorder._key_of(None if cid is None else str(cid), tid)
        attempt = current_attempt()
        if attempt is not None:
            rec["attempt"] = attempt
    recorder.emit(rec)
