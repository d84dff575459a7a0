"""Torch's compilation metrics and phase spans, read into a session the same way from the journal
and from a TORCH_TRACE log.

Both importers use this module: ``ingest.assemble`` (the journal's ``metrics`` and ``span``
records) and ``ingest.trace_to_session`` / ``trace_frames`` (a log's ``compilation_metrics`` records and
chromium events). So a compile's ``CompiledFrame`` reads the same whichever way it came;
``tests/e2e/test_journal_schema.py`` builds one compile both ways and compares.

* values: ``num`` / ``req_int`` (a value the record needs: ``ValueError`` skips the record),
  ``opt_num``, ``opt_int``, ``opt_str``, ``strs`` (unknown: ``None``, or an empty list);
* metrics: ``read_metrics`` turns the fields ``MAPPED`` names into ``FrameMetrics`` attributes
  and keeps every other scalar field (``model.journal.is_scalar``; never ``METRICS_DROP``'s) as a
  ``CompiledFrame.metrics`` entry; ``apply_metrics`` sets them on a frame;
* restarts: ``restart_details`` puts a frame's restart reasons in words, with where each was
  raised and how many restarts it caused;
* spans: ``pair_span`` pairs B/E events into spans (arguments: ``model.journal.span_args``),
  ``attempt_of`` reads ``compile_attempt_N``, ``phases`` sums the spans per name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dynaprof.fmt import stored_s
from dynaprof.model.journal import METRICS_DROP, Scalar, is_scalar, span_args
from dynaprof.model.reason_words import reason_words
from dynaprof.model.session import CompiledFrame, RestartReason

# -- values ----------------------------------------------------------------------------------------


def opt_num(x: Any) -> float | None:
    """A number (not a boolean) as a float; None for anything else, NaN, infinities and values
    beyond 1e300 (their differences would not be finite)."""
    if type(x) is float:
        return x if math.isfinite(x) and abs(x) < 1e300 else None
    if type(x) is int:
        return float(x) if abs(x) < 1e300 else None
    return None


def num(x: Any) -> float:
    """A number the record needs (see ``opt_num``), or ValueError: the record holding it is skipped."""
    v = opt_num(x)
    if v is None:
        raise ValueError(f"not a number: {x!r}"[:80])
    return v


def opt_int(x: Any) -> int | None:
    return x if type(x) is int else None


def req_int(x: Any) -> int:
    """An integer the record needs, or ValueError."""
    if type(x) is not int:
        raise ValueError(f"not an integer: {x!r}"[:80])
    return x


def opt_str(x: Any) -> str | None:
    return x if isinstance(x, str) else None


def strs(x: Any) -> list[str]:
    return [str(v) for v in x] if isinstance(x, list) else []


# -- compilation metrics ---------------------------------------------------------------------------

#: CompilationMetrics fields that become ``FrameMetrics`` attributes (frame fields, or run facts
#: for a TORCH_TRACE log, or the compile's identity): never ``CompiledFrame.metrics`` entries
MAPPED = frozenset({
    "compile_id", "co_name", "co_filename", "co_firstlineno", "guard_count", "shape_env_guard_count",
    "graph_op_count", "graph_node_count", "graph_input_count", "ir_count", "entire_frame_compile_time_s",
    "fail_type", "fail_reason", "fail_user_frame_filename", "fail_user_frame_lineno", "restart_reasons",
    "recompile_reason", "guard_latency_us", "python_version", "pytorch_version", "start_time", "start_time_us",
    "end_time_us",
})  # fmt: skip
#: frame counts that are CompilationMetrics fields of the same name
COUNTS = ("guard_count", "graph_op_count", "graph_node_count", "graph_input_count", "ir_count")


@dataclass
class FrameMetrics:
    """What one compile's CompilationMetrics say, checked (None: the metrics do not say)."""

    #: ``entire_frame_compile_time_s``; for a compile timed whole (``timed_whole``):
    #: ``duration_us`` (older torch's backward metrics: ``elapsed_time``)
    compile_time_s: float | None = None
    restart_reasons: list[str] | None = None
    guard_count: int | None = None
    shape_env_guard_count: int | None = None
    graph_op_count: int | None = None
    graph_node_count: int | None = None
    graph_input_count: int | None = None
    ir_count: int | None = None
    guard_latency_us: float | None = None
    recompile_reason: str | None = None
    fail_type: str | None = None
    fail_reason: str | None = None
    fail_filename: str | None = None
    fail_lineno: int | None = None
    #: ``co_name``, ``co_filename``, ``co_firstlineno`` (the journal has them from compile_start)
    name: str | None = None
    filename: str | None = None
    lineno: int | None = None
    #: the compile's window in epoch microseconds (``start_time_us``, else ``start_time``; ``end_time_us``)
    start_us: float | None = None
    end_us: float | None = None
    torch_version: str | None = None
    python_version: str | None = None
    #: every other scalar field: ``CompiledFrame.metrics`` (and the cache counters ``cache.py`` reads)
    extra: dict[str, Scalar] = field(default_factory=dict)


def timed_whole(kind: str, compile_id: str) -> bool:
    """Whether a compile's time is its metrics' ``duration_us`` rather than
    ``entire_frame_compile_time_s``: a lazy backward compile, and compiled autograd's capture of
    the autograd graph (``!N``; Dynamo's compiles of that graph, ``!N/F/C``, are frame compiles)."""
    return kind == "backward" or (kind == "compiled_autograd" and "/" not in compile_id)


def is_runtime(m: Mapping[str, Any]) -> bool:
    """Metrics torch logs at run time (``compilation_metrics_runtime``: autotuning, ...): no compile's."""
    return m.get("is_runtime") is True


def extra_metrics(m: Mapping[str, Any]) -> dict[str, Scalar]:
    """The ``CompiledFrame.metrics`` entries of a compile's metrics."""
    return {k: v for k, v in m.items() if k not in MAPPED and is_scalar(v) and not METRICS_DROP.search(k)}


def read_metrics(m: Mapping[str, Any], kind: str, compile_id: str) -> FrameMetrics:
    """One compile's CompilationMetrics (a journal ``metrics`` record's ``m``, a log's
    ``compilation_metrics``), for a frame of ``kind`` (forward, backward, compiled_autograd)."""
    if timed_whole(kind, compile_id):
        took = opt_num(m.get("duration_us"))
        compile_s = stored_s(took / 1e6) if took is not None else opt_num(m.get("elapsed_time"))
    else:
        compile_s = opt_num(m.get("entire_frame_compile_time_s"))
    reasons = m.get("restart_reasons")
    fail_file = opt_str(m.get("fail_user_frame_filename")) or None
    start_us = opt_num(m.get("start_time_us"))
    if start_us is None and (s := opt_num(m.get("start_time"))) is not None:
        start_us = s * 1e6
    tv, pv = opt_str(m.get("pytorch_version")), opt_str(m.get("python_version"))
    return FrameMetrics(
        compile_time_s=compile_s,
        restart_reasons=[str(r) for r in reasons] if isinstance(reasons, list) else None,
        guard_count=opt_int(m.get("guard_count")),
        shape_env_guard_count=opt_int(m.get("shape_env_guard_count")),
        graph_op_count=opt_int(m.get("graph_op_count")),
        graph_node_count=opt_int(m.get("graph_node_count")),
        graph_input_count=opt_int(m.get("graph_input_count")),
        ir_count=opt_int(m.get("ir_count")),
        guard_latency_us=opt_num(m.get("guard_latency_us")),
        recompile_reason=opt_str(m.get("recompile_reason")) or None,
        fail_type=fail_type_name(opt_str(m.get("fail_type"))),
        fail_reason=opt_str(m.get("fail_reason")),
        fail_filename=fail_file,
        fail_lineno=opt_int(m.get("fail_user_frame_lineno")) if fail_file else None,
        name=opt_str(m.get("co_name")),
        filename=opt_str(m.get("co_filename")),
        lineno=opt_int(m.get("co_firstlineno")),
        start_us=start_us,
        end_us=opt_num(m.get("end_time_us")),
        torch_version=tv or None,
        python_version=pv.split()[0] if pv and pv.strip() else None,
        extra=extra_metrics(m),
    )


#: how torch names the recompile limit a compile failed on: 2.13 "exceeding the recompile_limit cache
#: size limit", "Limit type: accumulated_recompile_limit"; 2.4 "cache_size_limit reached"
_CLASS_REPR = re.compile(r"^<class '(?:[\w.]*\.)?(\w+)'>$")


def fail_type_name(text: str | None) -> str | None:
    """The exception's class name: torch 2.4 logs ``str(type(e))`` (``<class 'torch._dynamo.exc.
    BackendCompilerFailed'>``), later torch the name (``BackendCompilerFailed``)."""
    if not text:
        return None
    m = _CLASS_REPR.match(text)
    return m.group(1) if m else text


_LIMIT_HIT = re.compile(
    r"exceeding the (\w+) cache size limit|Limit type: (\w+)|\b(\w*(?:cache_size|recompile)_limit) reached"
)


def recompile_limit_hit(fail_reason: str | None) -> str | None:
    """The config name of the recompile limit a failed compile hit (its later calls ran eager), or None."""
    m = _LIMIT_HIT.search(fail_reason or "")
    return next((g for g in m.groups() if g), None) if m else None


def window_exception(f: CompiledFrame, raised: object) -> None:
    """What a compile window raised (``"Type: message"``, as capture wrote it; nothing where it
    raised nothing). Torch 2.4 raises at the recompile limit before it logs the compile's metrics:
    that compile failed, and the exception is all that says so (later torch logs the same failure
    in its metrics too)."""
    if not raised:
        return
    exc = f.metrics["exception"] = str(raised)
    limit = recompile_limit_hit(exc)
    if limit is None or f.status == "failed":
        return
    kind, _, reason = exc.partition(": ")
    f.status, f.fail_type, f.fail_reason, f.recompile_limit_hit = "failed", kind, reason or exc, limit


def apply_metrics(f: CompiledFrame, fm: FrameMetrics) -> None:
    """Set on ``f`` what its metrics say; what they leave unknown keeps the frame's value (the
    importer's own measure or fallback)."""
    if fm.compile_time_s is not None:
        f.compile_time_s = fm.compile_time_s
    if fm.restart_reasons is not None:
        f.restart_reasons = fm.restart_reasons
    for name in COUNTS:
        if (v := getattr(fm, name)) is not None:
            setattr(f, name, v)
    f.guards.count = f.guard_count
    if fm.shape_env_guard_count is not None:
        f.guards.shape_env_count = fm.shape_env_guard_count
    if fm.guard_latency_us is not None:
        f.guards.latency_us = fm.guard_latency_us
    if fm.recompile_reason is not None:
        f.recompile_reason = fm.recompile_reason
    if fm.fail_type is not None:
        f.status, f.fail_type = "failed", fm.fail_type
        if fm.fail_reason is not None:
            f.fail_reason = fm.fail_reason
        f.recompile_limit_hit = recompile_limit_hit(f.fail_reason)
    if fm.fail_filename is not None:
        f.fail_filename, f.fail_lineno = fm.fail_filename, fm.fail_lineno
    f.metrics.update(fm.extra)



def restart_details(f: CompiledFrame) -> list[RestartReason]:
    """``f.restart_reasons`` in words, with where torch raised them and how many restarts each
    caused: for either importer, once the frame's restarts, restart reasons and graph breaks are
    set. Torch keeps the reasons in a set: with one reason every restart had it, with as many
    reasons as restarts each had one, otherwise the counts are unknown (None)."""
    raw = list(dict.fromkeys(" ".join(r.split()) for r in f.restart_reasons if r.strip()))
    if not raw:
        return []
    if len(raw) == 1:
        counts: list[int | None] = [f.restarts or None]
    elif len(raw) == f.restarts:
        counts = [1] * len(raw)
    else:
        counts = [None] * len(raw)
    sites = [(g.reason, g.filename, g.lineno) for g in f.graph_break_reasons if g.filename]
    out = []
    for r, n in zip(raw, counts, strict=True):
        site = next(((fn, ln) for reason, fn, ln in sites if reason and (reason in r or r in reason)), None)
        if site is None and len({(fn, ln) for _, fn, ln in sites}) == 1:
            site = (sites[0][1], sites[0][2])
        out.append(RestartReason(reason_words(r), n, site[0] if site else None, site[1] if site else None))
    return out


# -- spans -----------------------------------------------------------------------------------------

_ATTEMPT_SPAN = re.compile(r"compile_attempt_([0-9]+)")
K = TypeVar("K", bound=Hashable)
#: open B events per slot (a span name, or (frame key, thread, name)): [(ts, args)], innermost last
OpenSpans = dict[K, list[tuple[float, Mapping[str, Any]]]]


def pair_span(
    open_: OpenSpans[K], slot: K, name: str, ph: Any, ts: float, args: Any
) -> tuple[float, float, dict[str, Scalar]] | None:
    """Feed one event of ``slot``: a B opens a span; an E closes the slot's innermost open one
    and returns its (start, duration, arguments), times in the caller's unit. None for a B, an
    E without a B (a log that began mid-span), and any other phase."""
    if ph == "B":
        open_.setdefault(slot, []).append((ts, args if isinstance(args, Mapping) else {}))
        return None
    if ph != "E":
        return None
    started = open_.get(slot)
    if not started:
        return None
    start, begin_args = started.pop()
    if not started:
        del open_[slot]
    return start, max(ts - start, 0.0), span_args(name, begin_args, args)


def attempt_of(span_name: str) -> int | None:
    """N of torch's ``compile_attempt_N`` span (attempt N of a compile that restarted), else None."""
    m = _ATTEMPT_SPAN.fullmatch(span_name)
    return int(m.group(1)) if m else None


def phases(spans: Iterable[tuple[str, float, float]], per_second: float = 1.0) -> dict[str, float]:
    """Inclusive seconds per span name from (name, start, duration) in units of 1/``per_second``
    seconds; a span nested in one of the same name counts once."""
    by_name: dict[str, list[tuple[float, float]]] = {}
    for name, start, dur in spans:
        by_name.setdefault(name, []).append((start, start + dur))
    out: dict[str, float] = {}
    for name, ivs in by_name.items():
        ivs.sort()
        total, (lo, hi) = 0.0, ivs[0]
        for s, e in ivs[1:]:
            if s > hi:
                total, lo, hi = total + hi - lo, s, e
            else:
                hi = max(hi, e)
        out[name] = stored_s((total + hi - lo) / per_second)
    return out
