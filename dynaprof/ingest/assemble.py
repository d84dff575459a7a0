"""Journal records -> Session (pure; no torch). See ``dynaprof.capture.journal`` for the writer.

Records (``t`` field) and what they carry:
  start          pid, argv, cwd, python, platform, hostname, epoch_ns, dynaprof, target, kind, rank
  torch/hooks    torch version; names of the hooks that were installed
  warn           msg (shown in the session's capture warnings)
  fn             items: [id, name, filename, firstlineno, kind]  (function table, ids as in stacks)
  compile_start  key, cid, gen, tid, thread_name, ts, name, file, line, call_site, kind (forward |
                 backward | compiled_autograd), fwd (a backward's forward key), wrapped ([name, file,
                 line]: the module torch.compile(module) wraps)
  compile_end    key, ts, duration, attempt, exc, exc_type, graph_breaks, graph_break_reasons,
                 graph_break_sites, inlines, inlines_final (the final attempt's), props,
                 recompile_reasons (every cache entry's guard failures)
  span           key, name, ph (B/E/i), ts, tid, args       (Dynamo's dynamo_timed phases; ``i``:
                 instant events, among them the cache markers, see ``dynaprof.model.cache``)
  metrics        key, tid, m (CompilationMetrics, scalars only); a backward's: kind "backward",
                 fwd, ts (key null when no window opened for it: the frame is made from them)
  guards         key + guard tree / guard code sizes
  inline         key, items: [[path ids], calls, self seconds]   (torch's Dynamo profiler)
  stacks         items: [key, attempt, tid, [compiler ids], [traced ids], samples, seconds]
  sampler        source, requested_hz, samples, seconds, notes
  cprofile       files {key: path}, merged
  unfinished     key (a compile still running when the process ended)
  device, reset, end (exit_status, reason, ts)
All ``ts`` are seconds since the run started.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dynaprof.model.cache import CacheTally
from dynaprof.model.session import (
    SCHEMA_VERSION,
    Attempt,
    CaptureInfo,
    CompiledFrame,
    FunctionRef,
    GraphBreak,
    InlineStack,
    Location,
    PropertyTrace,
    RestartReason,
    RunInfo,
    Samples,
    Session,
    Span,
    Stack,
    outermost_frames,
    reason_words,
)
from dynaprof.version import __version__

#: CompilationMetrics fields kept verbatim in CompiledFrame.metrics (the rest have own fields)
KEPT_METRICS = (
    "entire_frame_compile_time_s",
    "backend_compile_time_s",
    "inductor_compile_time_s",
    "code_gen_time_s",
    "dynamo_time_before_restart_s",
    "cache_size",
    "accumulated_cache_size",
    "structured_logging_overhead_s",
    "gc_time_us",
    "guard_latency_us",
    "num_graph_breaks",
    "param_count",
    "param_numel",
    "has_guarded_code",
    "is_forward",
    "triton_compile_time_us",
    "joint_graph_pass_time_us",
    "pre_grad_pass_time_us",
    "post_grad_pass_time_us",
    "remote_cache_time_saved_s",
    "frame_key",
)


def _num(x: Any) -> float:
    """A finite number (not a boolean), or ValueError: the record holding it is skipped."""
    if type(x) not in (int, float) or not math.isfinite(x):
        raise ValueError(f"not a number: {x!r}"[:80])
    return float(x)


def _int(x: Any) -> int:
    if type(x) is not int:
        raise ValueError(f"not an integer: {x!r}"[:80])
    return x


def _opt_int(x: Any) -> int | None:
    return x if type(x) is int else None


def _opt_num(x: Any) -> float | None:
    return float(x) if type(x) in (int, float) and math.isfinite(x) else None


def _opt_str(x: Any) -> str | None:
    return x if isinstance(x, str) else None


def _strs(x: Any) -> list[str]:
    return [str(v) for v in x] if isinstance(x, list) else []


@dataclass
class ParentFacts:
    """What only the launching process knows."""

    command: list[str]
    exit_status: int | None
    signal: int | None = None
    wall_s: float | None = None
    sampler: str = "builtin"
    requested_hz: float | None = None
    native: bool = False
    cprofile: bool = False
    torch_trace_dir: str | None = None
    run_dir: str | None = None
    notes: list[str] = field(default_factory=list)


class _Builder:
    def __init__(self) -> None:
        self.start: dict[str, Any] = {}
        self.end: dict[str, Any] | None = None
        self.torch_version: str | None = None
        self.device: str | None = None
        self.hooks: list[str] = []
        self.warnings: list[str] = []
        self.fn_ids: dict[int, int] = {}
        self.functions: list[FunctionRef] = []
        self.frames: dict[str, CompiledFrame] = {}
        self.open_spans: dict[tuple[str | None, int, str], list[float]] = {}
        self.run_spans: list[Span] = []
        self.stacks: dict[tuple[Any, ...], list[float]] = {}
        self.inline: dict[tuple[Any, ...], list[float]] = {}
        self.sampler: dict[str, Any] | None = None
        self.cprofile: dict[str, Any] | None = None
        self.caches: dict[str, CacheTally] = {}  # frame key -> its cache markers
        self.cache_metrics: dict[str, dict[str, Any]] = {}  # frame key -> the metrics' cache counters
        self.recompile_reasons: dict[str, list[str]] = {}  # frame key -> every cache entry's failures
        self.torn = 0

    # -- per record ---------------------------------------------------------------------------
    def feed(self, r: dict[str, Any]) -> None:
        handler = getattr(self, "_on_" + str(r.get("t")), None)
        if handler is not None:
            try:
                handler(r)
            except Exception as e:  # a damaged record is skipped; the rest of the profile stays
                self.warnings.append(
                    f"skipped a malformed {str(r.get('t'))[:20]} record ({type(e).__name__}: {e})"[:300]
                )

    def _on_start(self, r: dict[str, Any]) -> None:
        self.start = r

    def _on_end(self, r: dict[str, Any]) -> None:
        self.end = r

    def _on_torch(self, r: dict[str, Any]) -> None:
        self.torch_version = _opt_str(r.get("version"))

    def _on_device(self, r: dict[str, Any]) -> None:
        self.device = _opt_str(r.get("device"))

    def _on_hooks(self, r: dict[str, Any]) -> None:
        self.hooks = _strs(r.get("items"))

    def _on_warn(self, r: dict[str, Any]) -> None:
        msg = str(r.get("msg", ""))
        if msg not in self.warnings:
            self.warnings.append(msg)

    def _on_fn(self, r: dict[str, Any]) -> None:
        for fid, name, filename, lineno, kind in r["items"]:
            if _int(fid) not in self.fn_ids:
                self.fn_ids[fid] = len(self.functions)
                self.functions.append(FunctionRef(str(name), str(filename), _int(lineno), str(kind)))

    def _on_compile_start(self, r: dict[str, Any]) -> None:
        key = str(r["key"])
        self.frames[key] = CompiledFrame(
            key=key,
            compile_id=str(r["cid"]),
            trace_id=str(r["cid"]),
            generation=_int(r.get("gen", 0)),
            name=str(r["name"]),
            filename=str(r["file"]),
            lineno=_int(r["line"]),
            thread=_int(r["tid"]),
            thread_name=str(r.get("thread_name", "")),
            start_s=_num(r["ts"]),
            compile_time_s=None,
            status="unfinished",
            call_site=[Location(str(n), str(f), _int(ln)) for n, f, ln in r.get("call_site", [])],
            kind=_opt_str(r.get("kind")) or "forward",
            forward_key=_opt_str(r.get("fwd")),
            wrapped=_location(r.get("wrapped")),
        )

    def _on_compile_end(self, r: dict[str, Any]) -> None:
        f = self.frames.get(str(r["key"]))
        if f is None:
            return
        duration = _num(r["duration"])
        f.metrics["window_s"] = duration
        if f.compile_time_s is None:
            f.compile_time_s = duration
        f.restarts = max(f.restarts, _opt_int(r.get("attempt")) or 0)
        if f.status == "unfinished":
            f.status = "ok"
        if r.get("exc"):
            f.metrics["exception"] = str(r["exc"])
        breaks = _opt_int(r.get("graph_breaks"))
        if breaks is not None:
            f.graph_breaks = max(0, breaks)
        sites = r.get("graph_break_sites") or []
        if sites:
            f.graph_break_reasons = [
                GraphBreak(str(s["reason"]), _opt_str(s.get("file")), _opt_int(s.get("line"))) for s in sites
            ]
        else:
            f.graph_break_reasons = [GraphBreak(str(g["reason"])) for g in r.get("graph_break_reasons", [])]
        if breaks is None and sites:
            f.graph_breaks = len(sites)
        f.inlined_calls = _opt_int(r.get("inlines"))
        final = _opt_int(r.get("inlines_final"))
        if f.inlined_calls is not None and final is not None and 0 <= final <= f.inlined_calls:
            f.inlined_calls, f.inlined_calls_discarded = final, f.inlined_calls - final
        reasons = r.get("recompile_reasons")
        if isinstance(reasons, list) and reasons:
            self.recompile_reasons[f.key] = [str(x) for x in reasons]
        f.properties = [_property(p) for p in r.get("props", [])]
        f.properties.sort(key=lambda p: -p.seconds)

    def _on_unfinished(self, r: dict[str, Any]) -> None:
        f = self.frames.get(str(r["key"]))
        if f is not None:
            f.status = "unfinished"

    def _on_span(self, r: dict[str, Any]) -> None:
        key = _opt_str(r.get("key"))
        tid = _int(r.get("tid", 0))
        name = str(r["name"])
        ts = _num(r["ts"])
        slot = (key, tid, name)
        if r.get("ph") == "B":
            self.open_spans.setdefault(slot, []).append(ts)
            return
        if r.get("ph") == "i":  # instant events: the cache markers (fx_graph_cache_hit, ...)
            if key is not None and key in self.frames:
                args = r.get("args")
                self.caches.setdefault(key, CacheTally()).event(name, args if isinstance(args, dict) else None)
            return
        if r.get("ph") != "E":
            return
        starts = self.open_spans.get(slot)
        if not starts:
            return
        begin = starts.pop()
        args = {str(k): v for k, v in (r.get("args") or {}).items() if _opt_num(v) is not None}
        span = Span(name, begin, round(max(0.0, ts - begin), 6), tid, args)
        frame = self.frames.get(key) if key is not None else None
        if frame is None:
            self.run_spans.append(span)
            return
        frame.spans.append(span)
        frame.phases[name] = round(frame.phases.get(name, 0.0) + span.duration_s, 6)
        if name.startswith("compile_attempt_") and name[16:].isdigit():
            idx = int(name[16:])
            frame.attempts.append(Attempt(idx, begin, span.duration_s))
            frame.restarts = max(frame.restarts, idx)

    def _backward_from_metrics(self, r: dict[str, Any], m: dict[str, Any]) -> CompiledFrame | None:
        """A backward compile known only from its metrics (no phase events: no window opened)."""
        fwd = self.frames.get(str(r.get("fwd")))
        if fwd is None:
            return None
        key, n = f"{fwd.key}:bw", 1
        while key in self.frames:
            n += 1
            key = f"{fwd.key}:bw{n}"
        ts = _opt_num(r.get("ts"))
        f = self.frames[key] = CompiledFrame(
            key=key, compile_id=fwd.compile_id, trace_id=fwd.compile_id, generation=fwd.generation,
            name=fwd.name, filename=fwd.filename, lineno=fwd.lineno, thread=_int(r.get("tid", fwd.thread)),
            thread_name=fwd.thread_name, start_s=ts if ts is not None else fwd.start_s, compile_time_s=None,
            kind="backward", forward_key=fwd.key, wrapped=fwd.wrapped,
        )  # fmt: skip
        return f

    def _on_metrics(self, r: dict[str, Any]) -> None:
        m = r.get("m") or {}
        if not isinstance(m, dict):
            raise ValueError("metrics are not an object")
        f = self.frames.get(str(r.get("key")))
        if f is None and r.get("kind") == "backward":
            f = self._backward_from_metrics(r, m)
        if f is None:
            return
        if f.kind == "backward":
            took = _opt_num(m.get("duration_us"))
            if took is not None:
                f.compile_time_s = round(took / 1e6, 6)
        attempt = _opt_int(r.get("attempt"))
        if attempt is not None:
            f.restarts = max(f.restarts, attempt)
        compile_s = _opt_num(m.get("entire_frame_compile_time_s"))
        if compile_s is not None:
            f.compile_time_s = compile_s
        reasons = m.get("restart_reasons")
        if isinstance(reasons, list):
            f.restart_reasons = [str(x) for x in reasons]
        for attr, name in (
            ("guard_count", "guard_count"),
            ("graph_op_count", "graph_op_count"),
            ("graph_node_count", "graph_node_count"),
            ("graph_input_count", "graph_input_count"),
            ("ir_count", "ir_count"),
        ):
            if _opt_int(m.get(name)) is not None:
                setattr(f, attr, m[name])
        f.guards.count = f.guard_count
        f.guards.shape_env_count = _opt_int(m.get("shape_env_guard_count"))
        f.guards.latency_us = _opt_num(m.get("guard_latency_us"))
        if m.get("recompile_reason"):
            f.recompile_reason = str(m["recompile_reason"])
        if m.get("fail_type"):
            f.status = "failed"
            f.fail_type = str(m["fail_type"])
            f.fail_reason = str(m.get("fail_reason") or "")
            fail_file = m.get("fail_user_frame_filename")
            if isinstance(fail_file, str) and fail_file:
                f.fail_filename, f.fail_lineno = fail_file, _opt_int(m.get("fail_user_frame_lineno"))
        self.cache_metrics[f.key] = {k: v for k, v in m.items() if "cache_hit_count" in k or "cache_miss_count" in k}
        for name in KEPT_METRICS:
            v = m.get(name)
            if isinstance(v, (str, bool)) or _opt_num(v) is not None:
                f.metrics[name] = v

    def _on_guards(self, r: dict[str, Any]) -> None:
        f = self.frames.get(str(r.get("key")))
        if f is None:
            return
        g = f.guards
        for name in ("tree_leaf_count", "tree_manager_count", "tree_depth", "code_text_chars", "code_text_lines"):
            if _opt_int(r.get(name)) is not None:
                setattr(g, name, r[name])
        if isinstance(r.get("sources"), dict):
            g.sources = {str(k): v for k, v in r["sources"].items() if type(v) is int}

    def _ids(self, raw: Iterable[Any]) -> tuple[int, ...]:
        return tuple(self.fn_ids[_int(i)] for i in raw)

    def _id(self, raw: Any) -> int:
        """One function-table id, or -1 for none."""
        i = _int(raw)
        return self.fn_ids.get(i, -1) if i >= 0 else -1

    def _on_stacks(self, r: dict[str, Any]) -> None:
        for item in r["items"]:
            key, attempt, tid, compiler, traced, n, secs = item[:7]
            spans, cause = (self._ids(item[7]), self._id(item[8])) if len(item) >= 9 else ((), -1)
            k = (_opt_str(key), _int(attempt), _int(tid), self._ids(compiler), self._ids(traced), spans, cause)
            count, seconds = _int(n), _num(secs)
            cur = self.stacks.setdefault(k, [0, 0.0])
            cur[0] += count
            cur[1] += seconds

    def _on_inline(self, r: dict[str, Any]) -> None:
        for path, calls, secs in r["items"]:
            k = (_opt_str(r.get("key")), self._ids(path))
            n, seconds = _int(calls), _num(secs)
            cur = self.inline.setdefault(k, [0, 0.0])
            cur[0] += n
            cur[1] += seconds

    def _on_sampler(self, r: dict[str, Any]) -> None:
        self.sampler = {
            "source": _opt_str(r.get("source")),
            "seconds": _opt_num(r.get("seconds")),
            "requested_hz": _opt_num(r.get("requested_hz")),
        }
        for note in _strs(r.get("notes")):
            self._on_warn({"msg": note})

    def _on_cprofile(self, r: dict[str, Any]) -> None:
        files = r.get("files")
        self.cprofile = {
            "files": {str(k): v for k, v in files.items() if isinstance(v, str)} if isinstance(files, dict) else {},
            "merged": _opt_str(r.get("merged")),
        }


def _location(x: Any) -> Location | None:
    if isinstance(x, list) and len(x) == 3 and isinstance(x[0], str) and isinstance(x[1], str) and type(x[2]) is int:
        return Location(x[0], x[1], x[2])
    return None


def _property(p: dict[str, Any]) -> PropertyTrace:
    return PropertyTrace(
        str(p["label"]),
        str(p["owner"]),
        str(p["name"]),
        str(p["getter_file"]),
        _int(p["getter_line"]),
        bool(p["parametrized"]),
        _int(p["count"]),
        _int(p["instances"]),
        _num(p["seconds"]),
    )


def assemble(records: Iterable[dict[str, Any] | None], facts: ParentFacts) -> Session:
    b = _Builder()
    for rec in records:
        if rec is None:
            b.torn += 1
            continue
        b.feed(rec)
    return _session(b, facts)


def _session(b: _Builder, facts: ParentFacts) -> Session:
    start = b.start
    complete = b.end is not None
    exit_status = facts.exit_status if facts.exit_status is not None else _opt_int((b.end or {}).get("exit_status"))
    if facts.signal is not None and (b.end or {}).get("reason") != "signal":
        reason = "signal"
    elif b.end is not None:
        reason = _opt_str(b.end.get("reason")) or "exited"
    else:
        reason = "lost"  # ended without cleanup: os._exit, a crash, or killed
    warnings = list(facts.notes) + b.warnings
    if b.torn:
        warnings.append(f"{b.torn} journal line(s) were cut off and skipped")
    if not complete:
        warnings.append(
            "the script ended without dynaprof's cleanup (os._exit, a crash or a kill): "
            "the profile holds what was recorded up to then"
        )
    frames = sorted(b.frames.values(), key=lambda f: (f.start_s, f.key))
    stacks = [
        Stack(k[0], k[1], k[2], list(k[3]), list(k[4]), int(v[0]), round(v[1], 9), list(k[5]), k[6])
        for k, v in sorted(b.stacks.items(), key=lambda kv: (str(kv[0][0]), -kv[1][1]))
    ]
    warnings += _clip_samples(frames, stacks)
    for f in frames:
        f.cache = b.caches.get(f.key, CacheTally()).result(b.cache_metrics.get(f.key))
        f.attempts.sort(key=lambda a: a.index)
        if f.restarts:
            f.trace_id = f"{f.compile_id}_{f.restarts}"
        if f.key in b.recompile_reasons:  # every entry's, as torch's recompiles log lists them
            f.recompile_reason = "\n".join(b.recompile_reasons[f.key])
        f.restart_details = restart_details(f)
        if f.restarts and not f.attempts:
            f.attempts = _sampled_attempts(f, stacks)
        if f.call_site and f.call_site[0].filename == "<string>" and f.call_site[0].lineno == 1:
            f.call_site = f.call_site[1:]  # older journals: dynaprof's own `python -c` bootstrap
    samples = None
    if facts.sampler != "none" and (b.sampler is not None or stacks):
        count = sum(s.samples for s in stacks)
        secs = sum(s.seconds for s in stacks)
        window = (b.sampler or {}).get("seconds") or 0.0
        requested = facts.requested_hz or (b.sampler or {}).get("requested_hz") or 0.0
        samples = Samples(
            (b.sampler or {}).get("source") or facts.sampler,
            requested,
            round(count / window, 1) if window > 0 else None,
            count,
            round(secs, 6),
            0,
            stacks,
        )
    inline = [InlineStack(k[0], list(k[1]), int(v[0]), round(v[1], 9)) for k, v in b.inline.items()] or None
    artifacts: dict[str, str] = {}
    if b.cprofile and facts.run_dir:
        for key, path in (b.cprofile.get("files") or {}).items():
            rel = os.path.relpath(path, facts.run_dir)
            if key in b.frames:
                b.frames[key].cprofile = rel
        if b.cprofile.get("merged"):
            artifacts["cprofile"] = os.path.relpath(b.cprofile["merged"], facts.run_dir)
    wall = facts.wall_s if facts.wall_s is not None else _opt_num((b.end or {}).get("ts"))
    run = RunInfo(
        command=facts.command,
        target=_opt_str(start.get("target")) or "?",
        argv=_strs(start.get("argv")),
        cwd=_opt_str(start.get("cwd")) or "",
        python_version=_opt_str(start.get("python")) or "",
        torch_version=b.torch_version,
        dynaprof_version=_opt_str(start.get("dynaprof")) or __version__,
        platform=_opt_str(start.get("platform")) or "",
        hostname=_opt_str(start.get("hostname")) or "",
        device=b.device,
        start_time=_iso(start.get("epoch_ns")),
        wall_s=wall,
        exit_status=exit_status,
        end_reason=reason,
        complete=complete and facts.signal is None,
        pid=_opt_int(start.get("pid")),
        rank=_opt_int(start.get("rank")),
        world_size=_opt_int(start.get("world_size")),
    )
    capture = CaptureInfo(
        sampler=facts.sampler,
        requested_hz=facts.requested_hz,
        native=facts.native,
        cprofile=facts.cprofile,
        torch_trace_dir=facts.torch_trace_dir,
        hooks=b.hooks,
        warnings=warnings,
    )
    spans = list(b.run_spans)
    if wall is not None:
        spans.insert(0, Span("script", 0.0, float(wall), _opt_int(start.get("tid")) or 0))
    return Session(SCHEMA_VERSION, run, capture, frames, b.functions, samples, inline, {}, spans, artifacts)


def _clip_samples(frames: list[CompiledFrame], stacks: list[Stack]) -> list[str]:
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
        f.sampled_clipped_s = round(sampled - f.compile_time_s, 6)
        clipped.append((f.trace_id, f.sampled_clipped_s))
    notes = []
    if clipped:
        total = sum(s for _, s in clipped)
        n = len(clipped)
        notes.append(
            f"sampled seconds of {n} compile{'s' * (n != 1)} exceeded {'their' if n != 1 else 'its'} compile time by "
            f"{total * 1e3:.1f} ms in all and were scaled down to it (the sampler's intervals stretch when threads "
            "compete for the CPU); attributed seconds never exceed a frame's compile time"
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


def restart_details(f: CompiledFrame) -> list[RestartReason]:
    """``f.restart_reasons`` in words, with where torch raised them and how many restarts each
    caused. Torch keeps the reasons in a set: with one reason every restart had it, with as many
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


def _sampled_attempts(f: CompiledFrame, stacks: list[Stack]) -> list[Attempt]:
    """Attempts from the samples (torch did not time them): sampled seconds per attempt index."""
    per: dict[int, float] = {}
    for st in stacks:
        if st.frame == f.key and st.attempt >= 0:
            per[st.attempt] = per.get(st.attempt, 0.0) + st.seconds
    if not per:
        return []
    return [Attempt(i, None, round(per.get(i, 0.0), 6), "sampled") for i in range(max(f.restarts, max(per)) + 1)]


def _iso(epoch_ns: Any) -> str:
    import datetime

    if type(epoch_ns) is not int:
        return ""
    try:
        stamp = datetime.datetime.fromtimestamp(epoch_ns / 1e9, tz=datetime.timezone.utc)
    except (OverflowError, ValueError, OSError):
        return ""
    return stamp.isoformat(timespec="milliseconds")
