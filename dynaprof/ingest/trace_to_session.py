"""Turn the records of one TORCH_TRACE log into a ``Session`` (``capture.source == "torch_trace"``).

Only per-frame aggregates are kept while streaming: spans, the reduced compilation metrics, guard
code counts and graph-break reasons; payloads are reduced chunk by chunk and dropped.

Frames are told apart by (generation, compile id). ``torch._dynamo.reset()`` restarts compile ids at
``0/0``, so a *start marker* (``dynamo_start``, or a chromium ``B`` of ``dynamo`` /
``entire_frame_compile``) for a compile id whose frame is already finished (has compilation
metrics) or has already seen that marker starts a new frame; when the old frame is of the newest
generation, a new generation starts too. Torch emits each marker once per compile, restarts
included, so only a reset can repeat one.

A lazy backward compile (AOT autograd, at the first ``.backward()``) is logged under its forward's
compile id: its ``entire_backward_compile`` span, the spans inside it, and its
``bwd_compilation_metrics`` (``aot_autograd_backward_compilation_metrics`` in older torch) become a
frame of its own, ``kind == "backward"``. Compiled autograd's capture of the autograd graph
(``compiled_autograd`` span, compile id ``!N``) and Dynamo's compiles of that graph (``!N/F/C``)
are ``kind == "compiled_autograd"``. Every frame is keyed as the live capture keys it
(``model.frame_keys``: ``#<generation>`` only where an id came round again, ``:bw`` for a
backward), in the order the log holds them; what each frame becomes is ``trace_frames``'s.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from dynaprof.errors import DynaprofError
from dynaprof.fmt import stored_s
from dynaprof.ingest.cache_keys import TraceLookups
from dynaprof.ingest.times import iso_utc
from dynaprof.ingest.torch_metrics import (
    attempt_of,
    opt_int,
    opt_num,
)
from dynaprof.ingest.torch_trace import (
    LOG_PREFIX,
    MAX_COLLECT_BYTES,
    Collect,
    Event,
    GuardText,
    TraceReader,
    decode_lines,
    rank_logs,
    rank_of,
    resolve_log,
)
from dynaprof.ingest.trace_frames import (
    MAX_ATTEMPTS,
    NO_ID,
    FrameAcc,
    OpenByName,
    Spans,
    finish_frame,
    rel,
    span_event,
)
from dynaprof.model import cache_keys, frame_keys
from dynaprof.model.frame_keys import BACKWARD_SPAN
from dynaprof.model.session import (
    SCHEMA_VERSION,
    CaptureInfo,
    Location,
    RunInfo,
    Session,
    Span,
)
from dynaprof.version import __version__

#: record types whose envelope is decoded (the rest are recognised from their first key only)
DECODE = frozenset({
    "str", "dynamo_start", "chromium_event", "compilation_metrics", "artifact",
    "dynamo_cpp_guards_str", "dynamo_guards", "dynamo_error", "bwd_compilation_metrics",
    "aot_autograd_backward_compilation_metrics", "optimize_ddp_split_child",
})  # fmt: skip
#: recognised types that hold nothing a session needs (graph dumps, fake-tensor descriptions, ...)
KNOWN = frozenset({
    "describe_storage", "describe_tensor", "describe_source", "dynamo_output_graph",
    "aot_joint_graph", "aot_forward_graph", "aot_backward_graph", "aot_inference_graph",
    "inductor_pre_grad_graph", "inductor_post_grad_graph", "inductor_output_code",
    "optimize_ddp_split_graph", "compiled_autograd_graph",
    "graph_dump", "link",
    "dump_file", "symbolic_shape_specialization", "guard_added", "guard_added_fast",
    "propagate_real_tensors_provenance", "missing_fake_kernel", "mismatched_fake_kernel", "exported_program",
    "compilation_metrics_runtime", "expression_created", "create_unbacked_symbol",
})  # fmt: skip
_CID = re.compile(r"!?\d+(?:/\d+){0,2}")
_START_SPANS = ("dynamo", "entire_frame_compile")
_BWD_METRICS = ("bwd_compilation_metrics", "aot_autograd_backward_compilation_metrics")
#: compile id of records that carry none (AOTInductor, ``torch._inductor.aot_compile``, export), as tlparse shows it
_ENTRY_SPANS = frozenset({"compile_fx_aot", "aot_compile", "inductor_compile", "compile_fx", "backend_compile",
                          "create_aot_dispatcher_function", "entire_frame_compile"})



class _Chromium:
    """Payload handler for one chromium event (small: a few lines, a few KB)."""

    __slots__ = ("builder", "chunks", "lineno", "meta")

    def __init__(self, builder: _Builder, meta: dict[str, Any], lineno: int) -> None:
        self.builder, self.meta, self.chunks, self.lineno = builder, meta, b"", lineno

    def feed(self, lines: list[bytes]) -> None:
        if len(self.chunks) < MAX_COLLECT_BYTES:
            self.chunks += b"".join(lines)

    def done(self) -> None:
        if len(self.chunks) < MAX_COLLECT_BYTES:
            self.builder.chromium_payload(self.meta, self.chunks, self.lineno)


class _Builder:
    def __init__(self, path: Path, strict: bool) -> None:
        self.path = path
        self.reader = TraceReader(path, strict=strict, decode=DECODE, known=KNOWN)
        self.strings: dict[int, str] = {}
        self.frames: list[FrameAcc] = []
        self.current: dict[str, FrameAcc] = {}
        self.generation = 0
        self.first_ts: float | None = None  # epoch µs of the log's first chromium event
        self.first_glog: float | None = None
        self.first_stamp: str | None = None
        self.pid: int | None = None
        self.rank: int | None = None
        self.torch_version: str | None = None
        self.python_version: str | None = None
        self.run_open: OpenByName = {}
        self.run_spans: Spans = []
        self.any_metrics = False
        self.ev: Event | None = None
        self.noid: FrameAcc | None = None  # the compile-id-less compile being collected
        self.noid_frames = 0
        self.bw_open: dict[str, FrameAcc] = {}  # compile id -> its backward compile in progress
        self.bw_done: dict[str, FrameAcc] = {}  # compile id -> its backward compile awaiting metrics
        self.cache_lookups = TraceLookups()  # the cache artifacts' lookups, with their keys' components

    def frame(self, cid: str, marker: str | None = None) -> FrameAcc:
        f = self.current.get(cid)
        if f is not None and marker is not None and (f.metrics is not None or marker in f.markers):
            if f.generation == self.generation:
                self.generation += 1  # the compile id came round again: torch._dynamo.reset()
            f = None
        if f is None:
            thread, glog_s, _, _ = self.ev.glog() if self.ev is not None else (None, None, None, None)
            f = self.current[cid] = FrameAcc(cid, self.generation, thread, glog_s)
            self.frames.append(f)
        if marker is not None:
            f.markers.add(marker)
        return f

    def context_frame(self, meta: dict[str, Any], marker: str | None = None, fallback: Any = None) -> FrameAcc | None:
        """The frame of a record's compile context (or of ``fallback``, a compile id string)."""
        fid, fcid = opt_int(meta.get("frame_id")), opt_int(meta.get("frame_compile_id"))
        ca = opt_int(meta.get("compiled_autograd_id"))
        if ca is not None:
            cid: str | None = f"{frame_keys.COMPILED_AUTOGRAD_PREFIX}{ca}" + (
                f"/{fid}/{fcid}" if fid is not None and fcid is not None else "")
        elif fid is not None and fcid is not None:
            cid = f"{fid}/{fcid}"
        else:
            cid = fallback if isinstance(fallback, str) and _CID.fullmatch(fallback) else None
        if cid is None:
            return None
        return self._with_attempt(self.frame(cid, marker), meta)

    def backward(self, fwd: FrameAcc) -> FrameAcc:
        """A new backward compile of the forward frame ``fwd``."""
        thread, glog_s, _, _ = self.ev.glog() if self.ev is not None else (None, None, None, None)
        bw = FrameAcc(fwd.compile_id, fwd.generation, thread, glog_s)
        bw.kind, bw.forward, bw.key_suffix = "backward", fwd, fwd.key_suffix
        self.frames.append(bw)
        return bw

    def _with_attempt(self, f: FrameAcc, meta: dict[str, Any]) -> FrameAcc:
        attempt = opt_int(meta.get("attempt"))
        if attempt is not None and attempt > f.max_attempt:
            f.max_attempt = min(attempt, MAX_ATTEMPTS)
        return f

    def noid_frame(self) -> FrameAcc:
        """The accumulator of compile-id-less records (becomes a ``-/-`` frame if it turns out to be
        a compile: it gets compilation metrics or a compile entry span)."""
        if self.noid is None:
            thread, glog_s, _, _ = self.ev.glog() if self.ev is not None else (None, None, None, None)
            self.noid = FrameAcc(NO_ID, self.generation, thread, glog_s)
        return self.noid

    def register_noid(self) -> None:
        """The compile-id-less accumulator is a compile: make it a frame; later records start another."""
        f = self.noid
        if f is None:
            return
        self.noid_frames += 1
        if self.noid_frames > 1:
            f.key_suffix = f"@{self.noid_frames}"
        self.frames.append(f)
        self.noid = None

    def run(self) -> None:
        handlers = {
            "str": self.on_str, "dynamo_start": self.on_start, "chromium_event": self.on_chromium,
            "compilation_metrics": self.on_metrics, "artifact": self.on_artifact,
            "dynamo_cpp_guards_str": self.on_cpp_guards, "dynamo_guards": self.on_guards,
            "dynamo_error": self.on_error, "bwd_compilation_metrics": self.on_bwd_metrics,
            "aot_autograd_backward_compilation_metrics": self.on_bwd_metrics,
            "optimize_ddp_split_child": self.on_ddp_child,
        }  # fmt: skip
        for ev in self.reader.events():
            self.ev = ev
            if self.first_glog is None:
                self.pid, self.first_glog, self.rank, self.first_stamp = ev.glog()
            if ev.meta is not None:
                if (rank := opt_int(ev.meta.get("rank"))) is not None:
                    self.rank = rank
                handlers[ev.type](ev, ev.meta)
        self.ev = None

    def on_str(self, ev: Event, meta: dict[str, Any]) -> None:
        item = meta["str"]
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and opt_int(item[1]) is not None:
            self.strings[item[1]] = item[0]

    def on_start(self, ev: Event, meta: dict[str, Any]) -> None:
        f = self.context_frame(meta, "dynamo_start")
        body = meta["dynamo_start"]
        stack = body.get("stack") if isinstance(body, dict) else None
        if f is None or not isinstance(stack, list):
            return
        f.call_site = []
        for entry in stack:
            if isinstance(entry, dict):
                fn = entry.get("filename")
                filename = self.strings.get(fn, f"<string {fn}>") if isinstance(fn, int) else str(fn or "")
                f.call_site.append(Location(str(entry.get("name", "")), filename, opt_int(entry.get("line")) or 0))

    def on_chromium(self, ev: Event, meta: dict[str, Any]) -> None:
        ev.payload = _Chromium(self, meta, ev.lineno)

    def chromium_payload(self, meta: dict[str, Any], payload: bytes, lineno: int) -> None:
        try:  # the TAB that starts each payload line is JSON whitespace: no need to strip it
            data = json.loads(payload.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            data = None
        stats = self.reader.stats
        if not isinstance(data, dict):
            if stats.payload_ok:  # (a payload that failed its md5 check is counted once, as that)
                stats.problem(lineno, "invalid JSON in a 'chromium_event' payload", "json")
            return
        name, ph, ts, args = data.get("name"), data.get("ph"), opt_num(data.get("ts")), data.get("args")
        if not isinstance(name, str) or ts is None:
            return
        args = args if isinstance(args, dict) else {}
        if ph == "i":  # instant events: the cache markers
            f = self.context_frame(meta, None, args.get("compile_id"))
            (f or self.noid_frame()).cache.event(name, args)
            return
        if ph not in ("B", "E"):
            return
        if self.first_ts is None:
            self.first_ts = ts
        marker = name if ph == "B" and name in _START_SPANS else None
        f = self.context_frame(meta, marker, args.get("compile_id"))
        if f is None:
            f = self.noid_frame()
            span_event(f.open, f.spans, name, ph, ts, args)
            return
        cid = f.compile_id
        if name == BACKWARD_SPAN and ph == "B":
            self.bw_open[cid] = self.backward(f)
        bw = self.bw_open.get(cid)
        if bw is not None:  # the spans of a backward compile carry its forward's compile id
            span_event(bw.open, bw.spans, name, ph, ts, args)
            if name == BACKWARD_SPAN and ph == "E" and BACKWARD_SPAN not in bw.open:
                self.bw_done[cid] = self.bw_open.pop(cid)
            return
        if ph == "B" and (attempt := attempt_of(name)) is not None:
            f.max_attempt = max(f.max_attempt, min(attempt, MAX_ATTEMPTS))
        span_event(f.open, f.spans, name, ph, ts, args)

    def on_metrics(self, ev: Event, meta: dict[str, Any]) -> None:
        m = meta["compilation_metrics"]
        if not isinstance(m, dict):
            return
        f = self.context_frame(meta, None, m.get("compile_id"))
        if f is None:  # AOTInductor, aot_compile: a compile without a compile id
            f = self.noid_frame()
            self.register_noid()
        self.any_metrics = True
        fm = f.set_metrics(m)
        if fm.torch_version is not None and self.torch_version is None:
            self.torch_version = fm.torch_version
        if fm.python_version is not None and self.python_version is None:
            self.python_version = fm.python_version

    def on_bwd_metrics(self, ev: Event, meta: dict[str, Any]) -> None:
        m = meta[ev.type]
        if not isinstance(m, dict):
            return
        fwd = self.context_frame(meta, None, m.get("compile_id"))
        if fwd is None:
            return
        cid = fwd.compile_id
        bw = self.bw_done.pop(cid, None) or self.bw_open.pop(cid, None)
        if bw is None:  # no span of it in the log (phase events are 2.5+)
            bw = self.backward(fwd)
        bw.set_metrics(m)
        self.any_metrics = True

    def on_artifact(self, ev: Event, meta: dict[str, Any]) -> None:
        art = meta["artifact"]
        name = art.get("name") if isinstance(art, dict) else None
        if isinstance(name, str) and name.startswith(cache_keys.ARTIFACT_PREFIXES):
            (acc := self.context_frame(meta) or self.noid_frame()).cache.artifact(name)
            ev.payload = self.cache_lookups.artifact(acc, name)  # the payload: the key's components
        elif name == "torch_version":
            ev.payload = Collect(self.torch_version_payload, 50)
        elif name == "dynamo_graph_break_reason" and (f := self.context_frame(meta)):
            ev.payload = Collect(f.add_graph_break, 300)
        elif name == "inductor_collective_schedule" and (f := self.context_frame(meta)):
            ev.payload = Collect(f.set_collectives, 10000)
        elif name == "recompile_reasons" and (f := self.context_frame(meta)):
            ev.payload = Collect(f.set_recompile_artifact, 200)

    def torch_version_payload(self, lines: list[bytes], cut: bool) -> None:
        try:
            data = json.loads(decode_lines(lines))
        except (ValueError, RecursionError):
            return
        v = data.get("pytorch_version") if isinstance(data, dict) else None
        if isinstance(v, str) and v:
            self.torch_version = v

    def on_cpp_guards(self, ev: Event, meta: dict[str, Any]) -> None:
        if f := self.context_frame(meta):
            ev.payload = GuardText(f.set_guards)

    def on_guards(self, ev: Event, meta: dict[str, Any]) -> None:
        if f := self.context_frame(meta):
            f.py_guards = None
            f.stats, f.guards_json_line = self.reader.stats, ev.lineno
            ev.payload = f

    def on_ddp_child(self, ev: Event, meta: dict[str, Any]) -> None:
        """DDP's optimizer split this frame's graph: one child (``submod_N``) per gradient bucket."""
        body = meta["optimize_ddp_split_child"]
        name = body.get("name") if isinstance(body, dict) else None
        if isinstance(name, str) and (f := self.context_frame(meta)):
            f.ddp_children.append(name[:100])

    def on_error(self, ev: Event, meta: dict[str, Any]) -> None:
        if f := self.context_frame(meta):
            body = meta["dynamo_error"]
            kind = (body.get("exc_type") or body.get("type")) if isinstance(body, dict) else None
            f.error = str(kind or "dynamo_error")[:200]
            ev.payload = Collect(f.set_error_text, 40)

    def session(self, rank: int | None) -> Session:
        stats = self.reader.stats
        if (pending := self.noid) is not None:
            if _ENTRY_SPANS & ({n for n, _, _, _ in pending.spans} | set(pending.open)):
                self.register_noid()
            else:  # compile-id-less spans of no compile (e.g. compile_file of a JIT compile): the run's
                self.run_spans.extend(pending.spans)
                self.noid = None
        origin = self.first_ts
        if origin is None:
            starts = [us for f in self.frames if (us := f.metrics_start_us) is not None]
            origin = min(starts) if starts else None
        # torch >= 2.4 logs every compile's metrics (and only newer ones log torch_version)
        expect_metrics = self.any_metrics or stats.truncated or stats.malformed > 0 or self.torch_version is not None
        done = {id(f): finish_frame(f, origin, self.first_glog, expect_metrics) for f in self.frames}
        frames = list(done.values())
        used: set[str] = set()
        for acc in self.frames:  # keyed as live capture keys them, in the order torch logged them
            fr = done[id(acc)]
            if acc.forward is not None and (fwd := done.get(id(acc.forward))) is not None:
                fr.name, fr.filename, fr.lineno, fr.forward_key = fwd.name, fwd.filename, fwd.lineno, fwd.key
                fr.thread = fr.thread or fwd.thread
                fr.key = frame_keys.backward_key(fwd.key, used)
            else:
                fr.key = frame_keys.frame_key(acc.compile_id + acc.key_suffix, acc.generation, used)
            used.add(fr.key)
        warnings = stats.warnings() + self.cache_lookups.warnings()
        if self.any_metrics and self.first_ts is None:  # torch 2.4: metrics, but no chromium event or artifact
            warnings.append(OLD_LOG_UNKNOWN)
            for fr in frames:  # its log holds no graph break: unknown, never 0
                fr.graph_breaks = None
        start_time = iso_utc(origin / 1e6) if origin is not None else None
        if start_time is None:
            start_time = self._glog_start_time()
            warnings.append("no epoch timestamps in the log: times come from glog prefixes (local clock, ms)")
        run_spans = [Span(n, rel(s, origin), stored_s(d / 1e6), self.pid or 0, a) for n, s, d, a in self.run_spans]
        run = RunInfo(
            command=[str(self.path)], target=str(self.path), argv=[], cwd="",
            python_version=self.python_version or "", torch_version=self.torch_version,
            dynaprof_version=__version__, platform="", hostname="", device=None, start_time=start_time,
            wall_s=None, exit_status=None, end_reason="lost" if stats.truncated else "exited",
            complete=not stats.truncated, pid=self.pid, rank=rank if rank is not None else self.rank,
        )  # fmt: skip
        capture = CaptureInfo(
            sampler="none", source="torch_trace", torch_trace_dir=str(self.path.parent), warnings=warnings
        )
        session = Session(SCHEMA_VERSION, run, capture, frames=frames, samples=None, spans=run_spans)
        session.cache_keys = self.cache_lookups.finish({id(a): done[id(a)].key for a in self.frames}, frames)
        return session

    def _glog_start_time(self) -> str:
        """Best effort: glog has no year or zone, so take the year of the file's mtime."""
        if not self.first_stamp:
            return ""
        try:
            year = datetime.fromtimestamp(self.path.stat().st_mtime).year
        except (OSError, ValueError, OverflowError):
            year = 1970
        return f"{year}-{self.first_stamp}"


#: what a log with compilation metrics but no chromium events (torch 2.4) cannot say
OLD_LOG_UNKNOWN = ("this log has compilation metrics but no phase events or artifacts (torch 2.4 writes neither): "
                   "its graph breaks, lazy backward compiles, recompile reasons and phase times "
                   "are unknown in this import; a live run (dynaprof run) captures them")


def build_session(path: Path, *, strict: bool = False, rank: int | None = None) -> Session:
    """Read one log file and build its Session (the rules are in the module docstring)."""
    b = _Builder(Path(path), strict)
    b.run()
    return b.session(rank)


def import_torch_trace(path: Path, *, strict: bool = False, rank: int | None = None) -> Session:
    """Build a Session from a TORCH_TRACE log file (plain or gzip) or the newest log in a directory.

    Raises DynaprofError for a missing or unreadable path, a file that is not a trace log, and in
    ``strict`` mode for the first malformed or truncated line (naming ``path:line``)."""
    path = Path(path)
    log = resolve_log(path, rank)
    session = build_session(log, strict=strict, rank=rank if rank is not None else rank_of(log))
    ranks = rank_logs(path) if path.is_dir() and rank is None else {}
    if len(ranks) > 1:
        session.capture.warnings.append(
            f"{path} holds logs of {len(ranks)} ranks ({', '.join(map(str, ranks))}); imported {log.name} only"
        )
    return session


def import_torch_trace_ranks(path: Path, *, strict: bool = False) -> dict[int, Session]:
    """One Session per rank for a directory of per-rank logs (the newest log of each rank)."""
    path = Path(path)
    if not path.is_dir():
        raise DynaprofError(f"{path}: not a directory of per-rank TORCH_TRACE logs")
    logs = rank_logs(path)
    if not logs:
        raise DynaprofError(f"{path}: no per-rank logs ({LOG_PREFIX}rank_<N>[_*].log) in this directory")
    return {r: build_session(p, strict=strict, rank=r) for r, p in logs.items()}
