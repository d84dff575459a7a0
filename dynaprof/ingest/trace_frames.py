"""One frame of a TORCH_TRACE log: what the import keeps of it while streaming (``FrameAcc``)
and the ``CompiledFrame`` it becomes (``finish_frame``). ``trace_to_session`` feeds the records
in and keys the frames (``model.frame_keys``, as the live capture keys them)."""

from __future__ import annotations

import json
from typing import Any

from dynaprof.fmt import stored_s
from dynaprof.ingest.torch_metrics import (
    FrameMetrics,
    OpenSpans,
    apply_metrics,
    attempt_of,
    opt_int,
    pair_span,
    phases,
    read_metrics,
    restart_details,
    timed_whole,
)
from dynaprof.ingest.torch_trace import MAX_COLLECT_BYTES, GuardText, decode_lines, parse_graph_break
from dynaprof.model import frame_keys
from dynaprof.model.cache import CacheTally
from dynaprof.model.frame_keys import BACKWARD_SPAN, COMPILED_AUTOGRAD_SPAN
from dynaprof.model.journal import DDP_BUCKET_SPAN
from dynaprof.model.session import Attempt, CompiledFrame, GraphBreak, GuardStats, Location, Span

NO_ID = "-/-"
#: the spans that name a compile-id-less compile, the first one present wins
_ENTRY_ORDER = ("compile_fx_aot", "aot_compile", "entire_frame_compile", "backend_compile", "compile_fx",
                "inductor_compile", "create_aot_dispatcher_function")
MAX_ATTEMPTS = 1000  # torch gives up after 100; anything above is a corrupt log

SpanRow = tuple[str, float, float, dict[str, Any]]  # name, start µs, duration µs, args
Spans = list[SpanRow]
OpenByName = OpenSpans[str]


def span_event(open_: OpenByName, done: Spans, name: str, ph: str, ts: float, args: dict[str, Any]) -> None:
    """Feed one B/E event; a span it closes is appended to ``done``."""
    if (span := pair_span(open_, name, name, ph, ts, args)) is not None:
        done.append((name, *span))


class FrameAcc:
    """What the import keeps about one (generation, compile id) while streaming."""

    def __init__(self, compile_id: str, generation: int, thread: int | None, glog_s: float | None) -> None:
        self.compile_id = compile_id
        self.key_suffix = ""  # "@2", "@3"... for the second, third... compile-id-less compile
        self.kind = frame_keys.kind_of_id(compile_id)
        self.forward: FrameAcc | None = None  # a backward's forward frame
        self.generation = generation
        self.thread = thread
        self.glog_s = glog_s
        self.markers: set[str] = set()
        self.call_site: list[Location] = []
        self.metrics: FrameMetrics | None = None  # what its compilation_metrics say
        self.max_attempt = 0
        self.open: OpenByName = {}
        self.spans: Spans = []
        self.breaks: dict[tuple[str, str | None, int | None], GraphBreak] = {}
        self.recompile_artifact: str | None = None
        self.guards: GuardText | None = None
        self.py_guards: int | None = None
        self.error: str | None = None
        self.error_text: str | None = None
        self.cache = CacheTally()
        self.collectives: list[str] | None = None
        self.ddp_children: list[str] = []  # optimize_ddp_split_child names, in the order logged
        self.guards_json = b""
        self.guards_json_line: int | None = None
        self.stats: Any = None  # ReadStats, to report a dynamo_guards payload that is not JSON

    def set_metrics(self, m: dict[str, Any]) -> FrameMetrics:
        self.metrics = read_metrics(m, self.kind, self.compile_id)
        return self.metrics

    def add_graph_break(self, lines: list[bytes], cut: bool) -> None:
        reason, filename, lineno = parse_graph_break(decode_lines(lines))
        self.breaks.setdefault((reason, filename, lineno), GraphBreak(reason, filename, lineno))

    def set_recompile_artifact(self, lines: list[bytes], cut: bool) -> None:
        text = decode_lines(lines).strip()
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
        self.recompile_artifact = ("\n".join(map(str, data)) if isinstance(data, list) else text) or None

    def set_collectives(self, lines: list[bytes], cut: bool) -> None:
        try:
            data = json.loads(decode_lines(lines))
        except (ValueError, RecursionError):
            return
        if isinstance(data, list) and not cut:
            self.collectives = (self.collectives or []) + [str(x)[:200] for x in data[:10000]]

    def set_error_text(self, lines: list[bytes], cut: bool) -> None:
        self.error_text = "\n".join(decode_lines(lines).strip().split("\n")[:10]) or None

    def set_guards(self, g: GuardText) -> None:
        self.guards = g

    def feed(self, lines: list[bytes]) -> None:
        """Payload handler for ``dynamo_guards`` (torch <= 2.4): a JSON list, one guard a line."""
        self.py_guards = (self.py_guards or 0) + sum(1 for line in lines if line.strip() not in (b"", b"[", b"]"))
        if len(self.guards_json) < MAX_COLLECT_BYTES:
            self.guards_json += b"".join(lines)

    def done(self) -> None:
        data, self.guards_json = self.guards_json, b""
        if self.stats is None or not self.stats.payload_ok or len(data) >= MAX_COLLECT_BYTES:
            return
        try:
            json.loads(data.decode("utf-8", "replace"))
        except (ValueError, RecursionError):  # tlparse: fail_dynamo_guards_json
            self.stats.problem(self.guards_json_line or 0, "invalid JSON in a 'dynamo_guards' payload", "json")

    @property
    def metrics_start_us(self) -> float | None:
        return self.metrics.start_us if self.metrics is not None else None


def rel(us: float, origin_us: float | None) -> float:
    return stored_s((us - origin_us) / 1e6) if origin_us is not None else 0.0


def _no_id_file(f: FrameAcc) -> str:
    return "<no compile id>" if f.compile_id == NO_ID else ""


def _ddp_bucket_spans(f: FrameAcc) -> Spans:
    """A ``ddp_bucket submod_N`` span per bucket of a frame DDP's optimizer split, as live capture
    records them: the log names the children, and the backend compiles them one after another,
    each under a top-level ``create_aot_dispatcher_function``. None when the counts differ (a
    backend without AOT autograd, a cut log): no guess."""
    if not f.ddp_children:
        return []
    aot = sorted((sp for sp in f.spans if sp[0] == "create_aot_dispatcher_function"), key=lambda sp: sp[1])
    top: Spans = []
    for sp in aot:  # not nested in the previous one (AOT autograd can call itself)
        if not top or sp[1] >= top[-1][1] + top[-1][2]:
            top.append(sp)
    if len(top) != len(f.ddp_children):
        return []
    n = len(top)
    return [(f"{DDP_BUCKET_SPAN} {name}", st, d, {"bucket": i, "buckets": n})
            for i, (name, (_, st, d, _a)) in enumerate(zip(f.ddp_children, top, strict=True))]


def finish_frame(f: FrameAcc, origin: float | None, first_glog: float | None, expect_metrics: bool) -> CompiledFrame:
    """The CompiledFrame of an accumulated frame; unknown facts stay None. What the compilation
    metrics say is set last (``torch_metrics.apply_metrics``, as for the journal); the log's other
    records are the fallbacks."""
    fm = f.metrics
    spans = sorted(f.spans + _ddp_bucket_spans(f), key=lambda s: s[1])
    efc = next((s for s in spans if s[0] == "entire_frame_compile"), None)
    start_s = _start_s(f, spans, efc, origin, first_glog)
    own = _own_span(f, spans)  # a backward's or compiled autograd's capture's span
    top = max(spans, key=lambda sp: sp[2]) if spans else None  # the longest span: the compile's entry point
    compile_s = _compile_s(f, efc, own, top)
    attempts = sorted(
        (Attempt(a, rel(st, origin), stored_s(d / 1e6)) for n, st, d, _ in spans if (a := attempt_of(n)) is not None),
        key=lambda a: a.index,
    )
    restarts = max([f.max_attempt, *(a.index for a in attempts)])
    if not attempts:
        attempts = [Attempt(i, None, None) for i in range(restarts + 1)]
    unfinished = "entire_frame_compile" in f.open or (fm is None and expect_metrics and own is None)
    if own is not None:
        unfinished = own[0] in f.open
    site = f.call_site
    name, filename, lineno = _named(f, spans, own, top)
    g = f.guards
    frame = CompiledFrame(
        key=f.compile_id + f.key_suffix,  # made unique, as live capture makes it, by Builder.session
        compile_id=f.compile_id,
        trace_id=f.compile_id + (f"_{restarts}" if restarts else ""),
        generation=f.generation,
        name=name if name is not None else (site[-1].name if site else ""),
        filename=filename if filename is not None else (site[-1].filename if site else _no_id_file(f)),
        lineno=lineno if lineno is not None else (site[-1].lineno if site else 0),
        thread=f.thread or 0,
        thread_name="",
        start_s=start_s,
        compile_time_s=compile_s,
        status="failed" if f.error else ("unfinished" if unfinished else "ok"),
        restarts=restarts,
        attempts=attempts,
        graph_breaks=len(f.breaks),
        graph_break_reasons=list(f.breaks.values()),
        recompile_reason=f.recompile_artifact,
        guard_count=f.py_guards,
        guards=GuardStats(
            count=f.py_guards,
            code_text_chars=g.chars if g else None,
            code_text_lines=g.lines if g else None,
            latency_us=g.latency_us if g else None,
            sources=g.sources if g else {},
        ),
        phases=phases(((n, st, d) for n, st, d, _ in spans), per_second=1e6),
        spans=[Span(n, rel(st, origin), stored_s(d / 1e6), f.thread or 0, a) for n, st, d, a in spans],
        fail_type=f.error,
        fail_reason=f.error_text,
        call_site=list(site),
        collectives=f.collectives,
        kind=f.kind,
    )
    if fm is not None:
        apply_metrics(frame, fm)
    if f.recompile_artifact:  # every cache entry's failures (the metrics hold the newest one's), as live
        frame.recompile_reason = f.recompile_artifact
    frame.restart_details = restart_details(frame)
    frame.metrics = dict(sorted(frame.metrics.items()))
    frame.cache = f.cache.result(frame.metrics)
    return frame


def _start_s(f: FrameAcc, spans: Spans, efc: SpanRow | None, origin: float | None, first_glog: float | None) -> float:
    """When the compile began, in run seconds: its first span, else its first log line."""
    begins = [s[1] for s in spans] + [ts for stack in f.open.values() for ts, _ in stack]
    start_us = efc[1] if efc else (min(begins) if begins else f.metrics_start_us)
    if start_us is not None and origin is not None:
        return rel(start_us, origin)
    if f.glog_s is not None and first_glog is not None:
        return stored_s(max(f.glog_s - first_glog, 0.0))
    return 0.0


def _compile_s(f: FrameAcc, efc: SpanRow | None, own: SpanRow | None, top: SpanRow | None) -> float | None:
    """The log's own measure of the compile time; the metrics' time replaces it where they have
    one (``apply_metrics``)."""
    fm = f.metrics
    compile_s = stored_s(efc[2] / 1e6) if efc is not None else None
    if own is not None:
        compile_s = stored_s(own[2] / 1e6)
    if compile_s is None and f.compile_id == NO_ID:  # no Dynamo frame: the metrics' window, else that span
        begin, end = (fm.start_us, fm.end_us) if fm is not None else (None, None)
        if begin is not None and end is not None and end >= begin:
            compile_s = stored_s((end - begin) / 1e6)
        elif top is not None:
            compile_s = stored_s(top[2] / 1e6)
    return compile_s


def _named(
    f: FrameAcc, spans: Spans, own: SpanRow | None, top: SpanRow | None
) -> tuple[str | None, str | None, int | None]:
    """(name, file, line) from the metrics; for a compile with no Dynamo frame, its entry span's
    name; for compiled autograd's capture, its graph."""
    fm = f.metrics
    name, filename, lineno = (fm.name, fm.filename, fm.lineno) if fm is not None else (None, None, None)
    if name is None and not f.call_site and f.compile_id == NO_ID:
        names = {sp[0] for sp in spans}
        entry = next((n for n in _ENTRY_ORDER if n in names), None)
        name = entry or (top[0] if top is not None else "(no compile id)")  # e.g. compile_fx_aot
    if own is not None and own[0] == COMPILED_AUTOGRAD_SPAN and name is None:
        graph = opt_int(own[3].get("graph_id"))
        name = "compiled autograd" + (f" graph {graph}" if graph is not None else "")
        filename, lineno = "<compiled autograd>", 0
    return name, filename, lineno


def _own_span(f: FrameAcc, spans: Spans) -> tuple[str, float, float, dict[str, Any]] | None:
    """The span that is a backward's or a compiled-autograd capture's whole compile (open: a
    zero-length stand-in), or None."""
    if not timed_whole(f.kind, f.compile_id):
        return None
    want = BACKWARD_SPAN if f.kind == "backward" else COMPILED_AUTOGRAD_SPAN
    got = next((sp for sp in spans if sp[0] == want), None)
    if got is None and want in f.open:
        start, args = f.open[want][0]
        return (want, start, 0.0, dict(args))
    return got
