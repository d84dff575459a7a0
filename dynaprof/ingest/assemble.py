"""Journal records -> Session (pure; no torch). The records are ``dynaprof.model.journal``'s
types (their docstrings say what each key holds); ``dynaprof.capture`` writes them.

What torch's metrics and phase spans become is ``ingest.torch_metrics``'s, shared with the
TORCH_TRACE import. Older journals are read too: unknown record types and keys are ignored,
missing keys read as unknown, and a record that does not hold what it must is skipped with a
warning (the rest of the profile stays).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from dynaprof.fmt import plural, stored_s
from dynaprof.ingest import kernel_split, kernel_waits
from dynaprof.ingest.cache_keys import JournalLookups
from dynaprof.ingest.frame_samples import clip_samples, sampled_attempts
from dynaprof.ingest.journal_values import add_count, location, or_default, property_trace
from dynaprof.ingest.kernel_match import PlainKernels, ReplayKernels, plain_kernels
from dynaprof.ingest.prof_files import total_calls
from dynaprof.ingest.sampler_totals import SamplerTotals, sampler_totals, samples_of
from dynaprof.ingest.times import iso_utc
from dynaprof.ingest.torch_metrics import (
    apply_metrics,
    attempt_of,
    is_runtime,
    num,
    opt_int,
    opt_num,
    opt_str,
    pair_span,
    phases,
    read_metrics,
    req_int,
    restart_details,
    strs,
    window_exception,
)
from dynaprof.model import frame_keys
from dynaprof.model.cache import CacheTally
from dynaprof.model.journal import (
    JOURNAL_SCHEMA,
    PROVENANCE_HOOK,
    AotGraph,
    CacheLookupRecord,
    Calls,
    CompileEnd,
    CompileStart,
    Config,
    CProfile,
    Device,
    End,
    Fn,
    Folded,
    Guards,
    Hooks,
    Inline,
    Kernel,
    KernelWait,
    KeyPart,
    Metrics,
    ReplayGraph,
    ReplaySkipped,
    Sampler,
    SpanEvent,
    Stacks,
    Start,
    Torch,
    Unfinished,
    Warn,
    Work,
)
from dynaprof.model.session import (
    SCHEMA_VERSION,
    Attempt,
    CaptureInfo,
    CompiledFrame,
    ConfigChange,
    FunctionRef,
    GraphBreak,
    InlineStack,
    Location,
    RunInfo,
    Samples,
    Session,
    Span,
    Stack,
)
from dynaprof.model.toolchain import toolchain_seconds
from dynaprof.version import __version__

#: what dynaprof measured itself, kept beside torch's metrics in ``CompiledFrame.metrics``:
#: ``window_s`` (the compile window's duration) and ``exception`` (what the compile raised)
OWN_METRICS = ("window_s", "exception")


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
        self.start: Start | None = None
        self.end: End | None = None
        self.torch_version: str | None = None
        self.torch_git: str | None = None
        self.env: dict[str, str] | None = None
        self.config: list[ConfigChange] | None = None
        self.device: str | None = None
        self.hooks: list[str] = []
        self.warnings: list[str] = []
        self.fn_ids: dict[int, int] = {}
        self.functions: list[FunctionRef] = []
        self.frames: dict[str, CompiledFrame] = {}
        self.open_spans: dict[tuple[str | None, int, str], list[tuple[float, Any]]] = {}
        self.run_spans: list[Span] = []
        self.stacks: dict[tuple[Any, ...], list[float]] = {}
        self.inline: dict[tuple[Any, ...], list[float]] = {}
        self.sampler: SamplerTotals | None = None
        self.cprofile_files: dict[str, str] = {}
        self.cprofile_merged: str | None = None
        self.caches: dict[str, CacheTally] = {}  # frame key -> its cache markers
        self.cache_metrics: dict[str, dict[str, Any]] = {}  # frame key -> its metrics (the cache counters)
        self.recompile_reasons: dict[str, list[str]] = {}  # frame key -> every cache entry's failures
        self.kernel_waits: list[kernel_waits.KernelWait] = []
        self.kernels: list[Kernel] = []  # the session's ids
        self.folded: list[str] = []  # a counterfactual run's folded parametrizations
        self.replay_graphs = 0  # graphs kept for the Inductor replay
        self.replay_skipped: list[str] = []  # "key: why" of graphs it cannot replay
        #: frame key -> [IR nodes, kernels] summed over the graphs Inductor compiled in it
        self.work: dict[str, list[int | None]] = {}
        #: frame key -> the ops of the graphs AOT autograd handed its compilers in it, summed
        self.aot_ops: dict[str, int | None] = {}
        self.cache_lookups = JournalLookups()  # every cache lookup, with its key's components
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

    def _on_start(self, r: Start) -> None:
        self.start = r
        env = r.get("env")
        if isinstance(env, dict):
            self.env = {str(k): str(v) for k, v in env.items()}
        schema = opt_int(r.get("schema")) or 1
        if schema > JOURNAL_SCHEMA:
            self.warnings.append(
                f"the journal was written by a newer dynaprof (journal schema {schema}; this one reads "
                f"{JOURNAL_SCHEMA}): what it does not know is left out"
            )

    def _on_end(self, r: End) -> None:
        self.end = r

    def _on_torch(self, r: Torch) -> None:
        self.torch_version = opt_str(r.get("version"))
        self.torch_git = opt_str(r.get("git"))

    def _on_config(self, r: Config) -> None:
        changes = r["changes"]
        if not isinstance(changes, list):
            raise ValueError("changes is not a list")
        got = [ConfigChange(*(str(x) for x in c[:4])) for c in changes if isinstance(c, list) and len(c) >= 4]
        self.config = sorted(got, key=lambda c: (c.module, c.name))
        error = opt_str(r.get("error"))
        if error:
            self._warn(f"compiler settings: {error}")

    def _on_device(self, r: Device) -> None:
        self.device = opt_str(r.get("device"))

    def _on_hooks(self, r: Hooks) -> None:
        self.hooks = strs(r.get("items"))

    def _on_warn(self, r: Warn) -> None:
        self._warn(str(r.get("msg", "")))

    def _warn(self, msg: str) -> None:
        if msg not in self.warnings:
            self.warnings.append(msg)

    def _on_fn(self, r: Fn) -> None:
        for fid, name, filename, lineno, kind in r["items"]:
            if req_int(fid) not in self.fn_ids:
                self.fn_ids[fid] = len(self.functions)
                self.functions.append(FunctionRef(str(name), str(filename), req_int(lineno), str(kind)))

    def _on_compile_start(self, r: CompileStart) -> None:
        key = str(r["key"])
        self.frames[key] = CompiledFrame(
            key=key,
            compile_id=str(r["cid"]),
            trace_id=str(r["cid"]),
            generation=req_int(r.get("gen", 0)),
            name=str(r["name"]),
            filename=str(r["file"]),
            lineno=req_int(r["line"]),
            thread=req_int(r["tid"]),
            thread_name=str(r.get("thread_name", "")),
            start_s=num(r["ts"]),
            compile_time_s=None,
            status="unfinished",
            call_site=[Location(str(n), str(f), req_int(ln)) for n, f, ln in r.get("call_site", [])],
            kind=opt_str(r.get("kind")) or "forward",
            forward_key=opt_str(r.get("fwd")),
            wrapped=location(r.get("wrapped")),
        )

    def _on_compile_end(self, r: CompileEnd) -> None:
        f = self.frames.get(str(r["key"]))
        if f is None:
            return
        duration = num(r["duration"])
        f.metrics["window_s"] = duration
        if f.compile_time_s is None:
            f.compile_time_s = duration
        f.restarts = max(f.restarts, opt_int(r.get("attempt")) or 0)
        if f.status == "unfinished":
            f.status = "ok"
        window_exception(f, r.get("exc"))
        breaks = opt_int(r.get("graph_breaks"))
        if breaks is not None:
            f.graph_breaks = max(0, breaks)
        sites = r.get("graph_break_sites") or []
        if sites:
            f.graph_break_reasons = [GraphBreak(str(s["reason"]), opt_str(s.get("file")), opt_int(s.get("line")),
                                                opt_str(s.get("via_file")), opt_int(s.get("via_line"))) for s in sites]
            if breaks is None:
                f.graph_breaks = len(sites)
        else:  # torch's counters (older journals list them beside the sites)
            f.graph_break_reasons = [GraphBreak(str(g["reason"])) for g in r.get("graph_break_reasons") or []]
        f.inlined_calls, f.cpu_instructions = opt_int(r.get("inlines")), opt_int(r.get("instructions"))
        final = opt_int(r.get("inlines_final"))
        if f.inlined_calls is not None and final is not None and 0 <= final <= f.inlined_calls:
            f.inlined_calls, f.inlined_calls_discarded = final, f.inlined_calls - final
        reasons = r.get("recompile_reasons")
        if isinstance(reasons, list) and reasons:
            self.recompile_reasons[f.key] = [str(x) for x in reasons]
        f.properties = [property_trace(p) for p in r.get("props") or []]
        f.properties.sort(key=lambda p: -p.seconds)

    def _on_calls(self, r: Calls) -> None:
        counts = r.get("counts")
        if not isinstance(counts, dict):
            return
        for key, n in counts.items():
            f = self.frames.get(str(key))
            if f is not None and isinstance(n, int) and not isinstance(n, bool) and n >= 0:
                f.calls = n
        for key, pair in (r.get("seconds") or {}).items():
            f = self.frames.get(str(key))
            if f is None or not isinstance(pair, list) or len(pair) != 2:
                continue
            f.call_time_total_s, f.call_time_median_s = (opt_num(v) for v in pair)

    def _on_unfinished(self, r: Unfinished) -> None:
        f = self.frames.get(str(r["key"]))
        if f is not None:
            f.status = "unfinished"

    def _on_span(self, r: SpanEvent) -> None:
        key = opt_str(r.get("key"))
        tid = req_int(r.get("tid", 0))
        name = str(r["name"])
        ts = num(r["ts"])
        ph = r.get("ph")
        if ph == "i":  # instant events: the cache markers (fx_graph_cache_hit, ...)
            if key is not None and key in self.frames:
                args = r.get("args")
                self.caches.setdefault(key, CacheTally()).event(name, args if isinstance(args, dict) else None)
            return
        done = pair_span(self.open_spans, (key, tid, name), name, ph, ts, r.get("args") if ph == "E" else None)
        if done is None:
            return
        begin, duration, args = done
        span = Span(name, begin, stored_s(duration), tid, args)
        frame = self.frames.get(key) if key is not None else None
        if frame is None:
            self.run_spans.append(span)
            return
        frame.spans.append(span)
        idx = attempt_of(name)
        if idx is not None:
            frame.attempts.append(Attempt(idx, begin, span.duration_s))
            frame.restarts = max(frame.restarts, idx)

    def _backward_from_metrics(self, r: Metrics) -> CompiledFrame | None:
        """A backward compile known only from its metrics (no phase events: no window opened)."""
        fwd = self.frames.get(str(r.get("fwd")))
        if fwd is None:
            return None
        key = frame_keys.backward_key(fwd.key, self.frames)
        ts = opt_num(r.get("ts"))
        f = self.frames[key] = CompiledFrame(
            key=key, compile_id=fwd.compile_id, trace_id=fwd.compile_id, generation=fwd.generation,
            name=fwd.name, filename=fwd.filename, lineno=fwd.lineno, thread=req_int(r.get("tid", fwd.thread)),
            thread_name=fwd.thread_name, start_s=ts if ts is not None else fwd.start_s, compile_time_s=None,
            kind="backward", forward_key=fwd.key, wrapped=fwd.wrapped,
        )  # fmt: skip
        return f

    def _on_metrics(self, r: Metrics) -> None:
        m = r.get("m") or {}
        if not isinstance(m, dict):
            raise ValueError("metrics are not an object")
        if is_runtime(m):  # not a compile's (older journals have them)
            return
        f = self.frames.get(str(r.get("key")))
        if f is None and r.get("kind") == "backward":
            f = self._backward_from_metrics(r)
        if f is None:
            return
        attempt = opt_int(r.get("attempt"))
        if attempt is not None:
            f.restarts = max(f.restarts, attempt)
        fm = read_metrics(m, f.kind, f.compile_id)
        apply_metrics(f, fm)
        self.cache_metrics[f.key] = fm.extra

    def _on_guards(self, r: Guards) -> None:
        f = self.frames.get(str(r.get("key")))
        if f is None:
            return
        g = f.guards
        g.tree_leaf_count = or_default(opt_int(r.get("tree_leaf_count")), g.tree_leaf_count)
        g.tree_manager_count = or_default(opt_int(r.get("tree_manager_count")), g.tree_manager_count)
        g.tree_depth = or_default(opt_int(r.get("tree_depth")), g.tree_depth)
        g.code_text_chars = or_default(opt_int(r.get("code_text_chars")), g.code_text_chars)
        g.code_text_lines = or_default(opt_int(r.get("code_text_lines")), g.code_text_lines)
        sources = r.get("sources")
        if isinstance(sources, dict):
            g.sources = {str(k): v for k, v in sources.items() if type(v) is int}
        error = r.get("error")
        if error:
            self._warn(f"guard sizes of compile {f.key} could not be measured ({str(error)[:200]})")

    def _ids(self, raw: Iterable[Any]) -> tuple[int, ...]:
        return tuple(self.fn_ids[req_int(i)] for i in raw)

    def _id(self, raw: Any) -> int:
        """One function-table id, or -1 for none."""
        i = req_int(raw)
        return self.fn_ids.get(i, -1) if i >= 0 else -1

    def _on_stacks(self, r: Stacks) -> None:
        for item in r["items"]:
            key, attempt, tid, compiler, traced, n, secs = item[:7]
            spans, cause = (self._ids(item[7]), self._id(item[8])) if len(item) >= 9 else ((), -1)
            k = (opt_str(key), req_int(attempt), req_int(tid), self._ids(compiler), self._ids(traced), spans, cause)
            count, seconds = req_int(n), num(secs)
            cur = self.stacks.setdefault(k, [0, 0.0])
            cur[0] += count
            cur[1] += seconds

    def _on_kernel_wait(self, r: KernelWait) -> None:
        shares = [(self._id(cid), num(s)) for cid, s in r["shares"]]
        self.kernel_waits.append(kernel_waits.KernelWait(
            str(r["key"]), self._id(r["cause"]), num(r["seconds"]), req_int(r["unmeasured"]),
            [(cid, s) for cid, s in shares if cid >= 0],
        ))  # fmt: skip

    def _on_kernel(self, r: Kernel) -> None:
        cause = self._id(r["cause"])
        if cause >= 0:
            self.kernels.append(Kernel(
                t="kernel", key=str(r["key"]), cause=cause, name=str(r["name"]), nodes=req_int(r["nodes"]),
                param_nodes=req_int(r["param_nodes"]), param=self._id(r["param"]), rest=self._id(r["rest"]),
                users=list(self._ids(r.get("users", []))),
            ))  # fmt: skip

    def _on_folded(self, r: Folded) -> None:
        self.folded += [str(t) for t in r["tensors"]]

    def _on_replay_graph(self, r: ReplayGraph) -> None:
        self.replay_graphs += 1  # what the replay process reads; here only counted

    def _on_replay_skipped(self, r: ReplaySkipped) -> None:
        self.replay_skipped.append(f"{r['key']}: {r['reason']}")

    def _on_work(self, r: Work) -> None:
        key = str(r["key"])
        acc = self.work.setdefault(key, [0, 0])
        for i, name in enumerate(("ir_nodes", "kernels")):
            acc[i] = add_count(acc[i], r.get(name))
        if "fx_ops" in r:  # a schema 5 or 6 journal: Inductor's hook counted the graph's ops
            self._add_aot_ops(key, r.get("fx_ops"))

    def _on_aot_graph(self, r: AotGraph) -> None:
        self._add_aot_ops(str(r["key"]), r.get("ops"))

    def _add_aot_ops(self, key: str, ops: object) -> None:
        self.aot_ops[key] = add_count(self.aot_ops.get(key, 0), ops)

    def _on_key_part(self, r: KeyPart) -> None:
        self.cache_lookups.key_part(r)

    def _on_cache_lookup(self, r: CacheLookupRecord) -> None:
        self.cache_lookups.lookup(r)

    def _on_inline(self, r: Inline) -> None:
        key = opt_str(r.get("key"))
        for path, calls, secs in r["items"]:
            k = (key, self._ids(path))
            n, seconds = req_int(calls), num(secs)
            cur = self.inline.setdefault(k, [0, 0.0])
            cur[0] += n
            cur[1] += seconds

    def _on_sampler(self, r: Sampler) -> None:
        self.sampler = sampler_totals(r)
        for note in strs(r.get("notes")):
            self._warn(note)

    def _on_cprofile(self, r: CProfile) -> None:
        files = r.get("files")
        if isinstance(files, dict):
            self.cprofile_files = {str(k): v for k, v in files.items() if isinstance(v, str)}
        self.cprofile_merged = opt_str(r.get("merged"))


def assemble(
    records: Iterable[dict[str, Any] | None], facts: ParentFacts, plain: PlainKernels | None = None,
    replay: ReplayKernels | None = None,
) -> Session:
    """The session of a journal; with ``plain``, the kernels of its counterfactual run; with
    ``replay``, what the Inductor replay of its graphs found (``capture.replay``)."""
    return _session(_build(records), facts, plain, replay)


def assemble_plain(records: Iterable[dict[str, Any] | None], facts: ParentFacts) -> tuple[Session, PlainKernels]:
    """A counterfactual run's session, and its kernels and folded tensors to compare against."""
    b = _build(records)
    plain = plain_kernels([kernel_split.matched_by(k, b.functions) for k in b.kernels], b.folded)
    session = _session(b, facts)
    plain.compile_s, plain.exit_status = session.total_compile_s, session.run.exit_status
    if session.samples is not None:
        plain.toolchain_s = stored_s(toolchain_seconds(session.samples.stacks, session.functions))
    return session, plain


def _build(records: Iterable[dict[str, Any] | None]) -> _Builder:
    b = _Builder()
    for rec in records:
        if rec is None:
            b.torn += 1
            continue
        b.feed(rec)
    return b


def _session(b: _Builder, facts: ParentFacts, plain: PlainKernels | None = None,
             replay: ReplayKernels | None = None) -> Session:
    # a journal without its start (or end) record reads as one with every key of it missing
    start = b.start if b.start is not None else cast(Start, {})
    end = b.end if b.end is not None else cast(End, {})
    complete = b.end is not None
    exit_status = facts.exit_status if facts.exit_status is not None else opt_int(end.get("exit_status"))
    # Ctrl-C the script did not catch: python ends itself with SIGINT once it has printed it
    if facts.signal is not None and end.get("reason") not in ("signal", "interrupted"):
        reason = "signal"
    elif b.end is not None:
        reason = opt_str(end.get("reason")) or "exited"
    else:
        reason = "lost"  # ended without cleanup: os._exit, a crash, or killed
    warnings = list(facts.notes) + b.warnings
    if b.torn:
        warnings.append(f"{plural(b.torn, 'journal line')} {'was' if b.torn == 1 else 'were'} cut off and skipped")
    if not complete:
        warnings.append("the script ended without dynaprof's cleanup (os._exit, a crash or a kill): "
                        "the profile holds what was recorded up to then")
    frames = sorted(b.frames.values(), key=lambda f: (f.start_s, f.key))
    stacks = [
        Stack(k[0], k[1], k[2], list(k[3]), list(k[4]), int(v[0]), round(v[1], 9), list(k[5]), k[6])
        for k, v in sorted(b.stacks.items(), key=lambda kv: (str(kv[0][0]), -kv[1][1]))
    ]
    # the replay's kernels split the run's whenever it ran (the default run's estimate); a
    # counterfactual run beside it is only counted, as the check of that estimate
    stacks, extra, checked = kernel_split.give_kernels(
        stacks, b.kernels, b.kernel_waits, b.functions, b.frames, replay.plain if replay is not None else plain,
        plain if replay is not None else None)
    warnings += clip_samples(frames, stacks)
    _finish_frames(b, frames, stacks)
    samples = _samples(b, facts, stacks)
    inline = [InlineStack(k[0], list(k[1]), int(v[0]), round(v[1], 9)) for k, v in b.inline.items()] or None
    artifacts: dict[str, str] = {}
    if facts.run_dir:
        for key, path in b.cprofile_files.items():
            rel = os.path.relpath(path, facts.run_dir)
            if key in b.frames:
                b.frames[key].cprofile = rel
                b.frames[key].python_calls = total_calls(path)
        if b.cprofile_merged:
            artifacts["cprofile"] = os.path.relpath(b.cprofile_merged, facts.run_dir)
    wall = facts.wall_s if facts.wall_s is not None else opt_num(end.get("ts"))
    run = _run_info(b, facts, start, wall, exit_status, reason, complete)
    capture = CaptureInfo(sampler=facts.sampler, requested_hz=facts.requested_hz, native=facts.native,
                          cprofile=facts.cprofile, torch_trace_dir=facts.torch_trace_dir, hooks=b.hooks,
                          warnings=warnings)
    spans = list(b.run_spans)
    if wall is not None:
        spans.insert(0, Span("script", 0.0, float(wall), opt_int(start.get("tid")) or 0))
    session = Session(SCHEMA_VERSION, run, capture, frames, b.functions, samples, inline, {}, spans, artifacts)
    session.cache_keys = b.cache_lookups.finish(frames, b.kernels, b.kernel_waits)
    session.counterfactual, session.replay = kernel_split.comparisons(
        plain, replay, extra, checked, len(b.kernels), b.replay_skipped)
    if session.replay is not None:
        session.capture.warnings += [
            f"Inductor replay: frame {why} (its fused kernels are split by node only)" for why in session.replay.failed]
    return session


def _finish_frames(b: _Builder, frames: list[CompiledFrame], stacks: list[Stack]) -> None:
    """What each frame gets from records beside its own: work counts, caches, spans as phases."""
    built = Counter(k["key"] for k in b.kernels) if PROVENANCE_HOOK in b.hooks else None
    for f in frames:
        if f.key in b.work:  # Inductor compiled here: a kernel is recorded as its build is asked for
            f.inductor_ir_nodes, f.inductor_kernels = b.work[f.key]
            f.kernels_defined = built[f.key] if built is not None else None
        if f.key in b.aot_ops:
            f.aot_graph_ops = b.aot_ops[f.key]
        f.cache = b.caches.get(f.key, CacheTally()).result(b.cache_metrics.get(f.key))
        f.metrics = dict(sorted(f.metrics.items()))
        f.spans.sort(key=lambda sp: sp.start_s)
        f.phases = phases((sp.name, sp.start_s, sp.duration_s) for sp in f.spans)
        f.attempts.sort(key=lambda a: a.index)
        if f.restarts:
            f.trace_id = f"{f.compile_id}_{f.restarts}"
        if f.key in b.recompile_reasons:  # every entry's, as torch's recompiles log lists them
            f.recompile_reason = "\n".join(b.recompile_reasons[f.key])
        f.restart_details = restart_details(f)
        if f.restarts and not f.attempts:
            f.attempts = sampled_attempts(f, stacks)
        if f.call_site and f.call_site[0].filename == "<string>" and f.call_site[0].lineno == 1:
            f.call_site = f.call_site[1:]  # older journals: dynaprof's own `python -c` bootstrap


def _samples(b: _Builder, facts: ParentFacts, stacks: list[Stack]) -> Samples | None:
    if facts.sampler == "none" or (b.sampler is None and not stacks):
        return None
    return samples_of(b.sampler, facts.sampler, facts.requested_hz, stacks)


def _run_info(b: _Builder, facts: ParentFacts, start: Start, wall: float | None, exit_status: int | None,
              reason: str, complete: bool) -> RunInfo:
    return RunInfo(
        command=facts.command,
        target=opt_str(start.get("target")) or "?",
        argv=strs(start.get("argv")),
        cwd=opt_str(start.get("cwd")) or "",
        python_version=opt_str(start.get("python")) or "",
        torch_version=b.torch_version,
        dynaprof_version=opt_str(start.get("dynaprof")) or __version__,
        platform=opt_str(start.get("platform")) or "",
        hostname=opt_str(start.get("hostname")) or "",
        device=b.device,
        start_time=_start_time(start.get("epoch_ns")),
        wall_s=wall,
        exit_status=exit_status,
        end_reason=reason,
        complete=complete and facts.signal is None,
        pid=opt_int(start.get("pid")),
        rank=opt_int(start.get("rank")),
        world_size=opt_int(start.get("world_size")),
        torch_git_version=b.torch_git,
        env=b.env,
        config=b.config,
    )


def _start_time(epoch_ns: Any) -> str:
    return (iso_utc(epoch_ns / 1e9) if type(epoch_ns) is int else None) or ""
