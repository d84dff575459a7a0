"""The compile windows of one profiled process, and the journal records they write.

A window is open on a thread while torch compiles there: a Dynamo frame compile
(``hooks.compile_windows`` opens it round ``convert_frame._compile``), or a compile that is not a
Dynamo frame, found from torch's phase events (``model.frame_keys.OWN_COMPILE_SPANS``: AOT autograd's
lazy backward compile, compiled autograd's capture of the autograd graph). The hooks in
``capture/hooks/`` record only inside a window, into the window's state here; the window's
``compile_end`` record is written as it closes. ``torch_hooks.Recorder`` installs the hooks.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dynaprof.capture import node_causes
from dynaprof.capture.call_sites import call_site, wrapped_callable
from dynaprof.capture.guard_sizes import guard_text_stats, guard_tree_stats
from dynaprof.capture.progress import child_eraser
from dynaprof.capture.stacks import FunctionKey, FunctionTable, Markers, TracedStacks
from dynaprof.capture.torch_config import config_changes
from dynaprof.capture.torch_private import _private
from dynaprof.fmt import plural, stored_s
from dynaprof.model import frame_keys
from dynaprof.model.cache_keys import ParsedLookup
from dynaprof.model.journal import (
    CompileEnd,
    CompileStart,
    FrameKind,
    GraphBreakSite,
    GuardSizes,
    JournalRecord,
    LocationItem,
    Prop,
    SpanEvent,
    span_args,
)


@dataclass
class PropStat:
    """One traced ``@property`` of a compile as it is counted: its journal record (``count`` and
    ``seconds`` added to in place) and the instances seen, written as their number."""

    record: Prop
    instances: set[int] = field(default_factory=set)


@dataclass
class Window:
    """One compile open on a thread, and what the hooks saw in it so far."""

    key: str
    compile_id: str
    tid: int
    start_ns: int
    attempt: int = 0
    graph_breaks_before: dict[str, int] = field(default_factory=dict)
    graph_break_sites: list[GraphBreakSite] = field(default_factory=list)
    props: dict[tuple[str, str], PropStat] = field(default_factory=dict)
    prop_depth: int = 0
    #: the property Dynamo is resolving, already on the traced stack, until the next translator is
    #: pushed (``hooks.properties``): its getter's, when it inlines the getter
    prop_pending: tuple[Any, ...] | None = None
    #: the properties whose getters are being traced, innermost last (``hooks.properties``)
    prop_open: list[Any] = field(default_factory=list)
    inlines: int = 0
    #: inlined calls per attempt (restarts throw the earlier attempts' away)
    inlines_by_attempt: dict[int, int] = field(default_factory=dict)
    #: every cache entry's guard failures, as torch's recompiles log lists them (None: not seen)
    recompile_reasons: list[str] | None = None
    #: depth of the thread's traced stack when this compile began, and root translator runs so far
    traced_base: int = 0
    root_runs: int = 0
    #: kernels handed to a compile worker and not waited for yet, and each one's build seconds as
    #: the worker measured them (``capture.kernel_builds``)
    kernel_pending: set[str] = field(default_factory=set)
    kernel_worker_s: dict[str, float] = field(default_factory=dict)
    #: Inductor kernel name (names repeat across graphs) -> its origin nodes' parts
    #: (``node_causes.KernelParts``), and the cause id its build is sampled under
    kernel_parts: dict[str, node_causes.KernelParts] = field(default_factory=dict)
    kernel_ids: dict[str, int] = field(default_factory=dict)
    #: forward (a Dynamo frame compile), backward (AOT autograd's lazy backward compile) or
    #: compiled_autograd (compiled autograd's capture of the autograd graph)
    kind: FrameKind = "forward"
    #: opened from a phase event (``frame_keys.OWN_COMPILE_SPANS``), not by Dynamo's frame compile:
    #: no guards, no inlines
    aux: bool = False
    #: the hardware instruction counter's id for this window (``hooks.instructions``; -1: none)
    instructions_id: int = -1


class CodeInfo(NamedTuple):
    """What a ``compile_start`` record says of the compiled code (a backward's: its forward's)."""

    name: str
    file: str
    line: int
    wrapped: LocationItem | None = None


class NotHooked(Exception):
    """Raised by a hook installer that leaves its hook out on purpose (nothing to hook in this
    process): not a failure, so no warning now (``CompileRecorder.warn_if_imported``)."""


class CompileRecorder:
    """The compile windows of one profiled process, what the hooks record in them, and the records."""

    def __init__(self, emit: Callable[[JournalRecord], None], t0_ns: int, table: FunctionTable) -> None:
        self.emit = emit
        self.t0_ns = t0_ns
        self.table = table
        self.generation = 0
        self.hooks: list[str] = []
        self.windows: dict[int, list[Window]] = {}
        self.on_window_start: Callable[[int], None] = lambda _tid: None
        self.on_window_end: Callable[[int], None] = lambda _tid: None
        self._pending_guards: list[tuple[str, Any]] = []
        self._keys_used: set[str] = set()
        self._key_by_cid: dict[str, str] = {}  # latest key given to each compile id
        self.markers = Markers()
        self.traced = TracedStacks()
        self.tx_hooked = False  # hooks.traced_stack's push/pop wrappers are in place
        self.count_inlines = False  # the ``inlines`` step: count each translator above the root
        #: a sampler reads ``causes`` (``Capture.attach``): without one, pushing a cause per guard
        #: built (``hooks.guard_causes``) buys nothing and cost the parametrized seed ~1%
        self.causes_sampled = True
        #: the ``properties`` step, where torch lets it time a getter from its translator's push and pop
        self.on_getter_push: Callable[[Window, int, Any, Any], None] | None = None
        self.on_getter_pop: Callable[[Window, int, Any], None] | None = None
        self.spans = TracedStacks()  # ids of torch's open timed spans, per thread
        self.causes = TracedStacks()  # cause ids of the FX nodes being worked on, per thread
        self._cause_keys: dict[int, FunctionKey] = {}
        self._cause_parts: dict[int, frozenset[FunctionKey]] = {}  # a combined cause's single-node causes
        self._node_causes: dict[tuple[Any, Any], int] = {}
        self._lazy: list[tuple[str, str, Callable[[], None]]] = []
        #: ``torch._C._instruction_counter`` where the machine has one (``hooks.instructions``)
        self.instructions: Any = None
        #: the same, installed at the first compile window after their module is imported instead
        #: (a torch without phase events, 2.4, has no span to install them at)
        self._lazy_at_window: list[tuple[str, str, Callable[[], None]]] = []
        #: (module, warning) of hooks left out while their module was not imported
        self._unhooked: list[tuple[str, str]] = []
        self._knows_attempt = False
        #: torch's counters (``torch._dynamo.utils.counters``: graph breaks), once hooked
        self._counters: Any = None
        #: the code objects of the hooked compile entry and property resolution (for the markers)
        self._compile_code: Any = None
        self._rdd_code: Any = None
        #: frame key -> what its compile_start said (name, file, line, wrapped): backward reuses it
        self._frame_info: dict[str, CodeInfo] = {}
        self._bw_key_by_cid: dict[str, str] = {}  # latest backward key of each compile id
        #: frame key -> one call counter per compiled graph of that compile: [calls, total ns,
        #: durations ns...] (the timing part only with ``time_calls``)
        self.call_counters: dict[str, list[list[int]]] = {}
        #: time each call of a graph compiled from now on (``--time-calls``)
        self.time_calls = False
        #: compute AOTAutograd's cache-key components (``capture.cache_keys``; ``--aot-components``)
        self.aot_components = False
        #: journals one cache lookup (``capture.cache_keys``' ``CacheKeyHooks.emit``, set where it is
        #: installed): the kernel code cache lookups share its ``key_part`` ids
        self.cache_lookup: Callable[[ParsedLookup, str | None], None] | None = None
        #: False outside a profiled block (in-process profiling): no window opens from a span
        self.gate: Callable[[], bool] = lambda: True
        #: under ``dynaprof run`` on a terminal: erases the parent's progress line as a compile ends
        self.erase_progress = child_eraser()
        #: (config module, setting) dynaprof itself changed: left out of the recorded changes
        self.own_config: set[tuple[str, str]] = set()

    def emit_config(self) -> None:
        """The ``config`` record: the settings that differ from their defaults now."""
        changes, errors = config_changes(frozenset(self.own_config))
        if errors:
            self.emit({"t": "config", "changes": changes, "error": "; ".join(errors)})
        else:
            self.emit({"t": "config", "changes": changes})

    def reset_session(self, emit: Callable[[JournalRecord], None], t0_ns: int, table: FunctionTable) -> None:
        """Record into a new journal and function table (in-process profiling: one per block).
        Everything keyed by the old table's ids is dropped with it."""
        self.emit = emit
        self.t0_ns = t0_ns
        self.table = table
        self.generation = 0
        self._keys_used = set()
        self._key_by_cid = {}
        self._pending_guards = []
        self._cause_keys = {}
        self._cause_parts = {}
        self._node_causes = {}
        self._frame_info = {}
        self._bw_key_by_cid = {}
        self.call_counters = {}  # an earlier block's counters go on counting, into lists nobody reads

    # -- time & helpers ---------------------------------------------------------------------
    def rel(self, epoch_ns: float) -> float:
        return stored_s((epoch_ns - self.t0_ns) / 1e9)

    def current(self, tid: int) -> Window | None:
        stack = self.windows.get(tid)
        return stack[-1] if stack else None

    def current_key(self, tid: int) -> tuple[str | None, int] | None:
        """(frame key, attempt) for the sampler; attempt -1 when nothing tells it (no phase events)."""
        w = self.current(tid)
        if w is None:
            return None
        return (w.key, w.attempt if self._knows_attempt else -1)

    def sample_context(self, tid: int) -> tuple[tuple[int, ...], int]:
        """(ids of torch's open spans, innermost node cause id or -1) on ``tid``. Read by samples:
        list reads only."""
        return self.spans.get(tid), self.causes.top(tid)

    def _key_for(self, compile_id: str) -> str:
        """The compile's key (``frame_keys.frame_key``: after a reset ids repeat)."""
        key = frame_keys.frame_key(compile_id, self.generation, self._keys_used)
        self._keys_used.add(key)
        self._key_by_cid[compile_id] = key
        return key

    def _key_of(self, compile_id: str | None, tid: int) -> str | None:
        w = self.current(tid)
        if w is not None and (compile_id is None or w.compile_id == compile_id):
            return w.key
        if compile_id is None:
            return None
        return self._key_by_cid.get(compile_id, compile_id)

    def warn(self, message: str) -> None:
        self.emit({"t": "warn", "msg": message})

    def warn_if_imported(self, module: str, message: str) -> None:
        """Warn ``message`` at the next flush (a reset, the end of the run) if ``module`` is imported
        by then: a hook that could not be installed matters only where its module is used."""
        self._unhooked.append((module, message))

    def _warn_unhooked(self) -> None:
        imported = [(m, msg) for m, msg in self._unhooked if m in sys.modules]
        self._unhooked = [u for u in self._unhooked if u[0] not in sys.modules]
        for _module, message in imported:
            self.warn(message)

    def emit_functions(self) -> None:
        new = self.table.take_new()
        if new:
            self.emit({"t": "fn", "items": new})

    def call_counts(self) -> tuple[dict[str, int], dict[str, list[float | None]]]:
        """Calls of each compiled entry: the most of its graphs' (each runs once per call); and for
        timed entries [total, median] seconds in their graphs (median: one graph only)."""
        counts: dict[str, int] = {}
        seconds: dict[str, list[float | None]] = {}
        for key, cells in sorted(self.call_counters.items()):
            if not cells:
                continue
            counts[key] = max(c[0] for c in cells)
            if all(len(c) >= 2 for c in cells):
                total = sum(c[1] for c in cells) / 1e9
                durations = cells[0][2:] if len(cells) == 1 else []
                median = statistics.median(durations) / 1e9 if durations else None
                seconds[key] = [round(total, 9), None if median is None else round(median, 9)]
        return counts, seconds

    def _graph_break_counts(self) -> dict[str, int]:
        if self._counters is None:
            return {}
        return dict(self._counters.get("graph_break", {}))

    def _begin(self, code: Any, compile_id: str | None, closure: Any = None) -> Window:
        tid = threading.get_ident()
        cid = compile_id or "?"
        win = Window(self._key_for(cid), cid, tid, time.time_ns(), graph_breaks_before=self._graph_break_counts())
        if frame_keys.is_compiled_autograd(cid):
            win.kind = "compiled_autograd"  # Dynamo compiling the graph compiled autograd captured
        try:
            wrapped = wrapped_callable(code, closure)
        except Exception:
            wrapped = None
        info = CodeInfo(
            str(getattr(code, "co_name", "?")), str(getattr(code, "co_filename", "?")),
            int(getattr(code, "co_firstlineno", 0)), wrapped,
        )  # fmt: skip
        self._frame_info[win.key] = info
        if self._lazy_at_window:
            self._lazy_at_window = self._install_imported(self._lazy_at_window)
        if self._lazy:  # a torch without phase events (2.4) has no span to install them at
            self._install_lazy()
        self._open(win, info)
        return win

    def _open(self, win: Window, info: CodeInfo, fwd: str | None = None) -> None:
        tid = win.tid
        win.traced_base = self.traced.depth(tid)
        if self.instructions is not None:
            win.instructions_id = self.instructions.start()
        stack = self.windows.setdefault(tid, [])
        stack.append(win)
        rec: CompileStart = {
            "t": "compile_start",
            "key": win.key,
            "cid": win.compile_id,
            "gen": self.generation,
            "tid": tid,
            "thread_name": threading.current_thread().name,
            "ts": self.rel(win.start_ns),
            "name": info.name,
            "file": info.file,
            "line": info.line,
            "call_site": call_site(),
            "kind": win.kind,
        }
        if info.wrapped is not None:
            rec["wrapped"] = info.wrapped
        if fwd is not None:
            rec["fwd"] = fwd
        self.emit(rec)
        if len(stack) == 1:
            self.on_window_start(tid)

    def _begin_aux(self, kind: FrameKind, compile_id: str | None, tid: int, args: dict[str, Any]) -> None:
        """Open a window for a compile that is not a Dynamo frame (``frame_keys.OWN_COMPILE_SPANS``)."""
        if not self.gate():
            return
        if compile_id is None:
            try:
                current = _private("torch._guards").CompileContext.current_compile_id()
            except Exception:
                current = None
            compile_id = None if current is None else str(current)
        cid = compile_id or "?"
        if kind == "backward":
            fwd = self._key_by_cid.get(cid, cid)
            key = frame_keys.backward_key(fwd, self._keys_used)
            self._keys_used.add(key)
            self._bw_key_by_cid[cid] = key
            info = self._frame_info.get(fwd) or CodeInfo("backward", "?", 0)
            of: str | None = fwd
        else:
            key = self._key_for(cid)
            graph = args.get("graph_id")
            info = CodeInfo("compiled autograd" + (f" graph {graph}" if isinstance(graph, int) else ""),
                             "<compiled autograd>", 0)
            of = None
        win = Window(key, cid, tid, time.time_ns(), graph_breaks_before=self._graph_break_counts(), kind=kind, aux=True)
        self._open(win, info, of)

    def _end_aux(self, kind: FrameKind, tid: int) -> None:
        for win in reversed(self.windows.get(tid, [])):
            if win.kind == kind:
                self._end(win, None, None)
                return

    def _end(self, win: Window, result: Any, exc: BaseException | None) -> None:
        end_ns = time.time_ns()
        # before dynaprof's own work below (guard trees, the record), which is not the compile's
        instructions = self.instructions.end(win.instructions_id) if win.instructions_id >= 0 else None
        stack = self.windows.get(win.tid, [])
        # the thread's last open window: stop sampling (and cProfile) before dynaprof's own work at
        # the end of a compile (guard trees, the record), which is not the compile's time
        stopped = bool(stack) and all(w is win for w in stack)
        if stopped:
            self.on_window_end(win.tid)
        after = self._graph_break_counts()
        new_breaks = {
            r: n - win.graph_breaks_before.get(r, 0) for r, n in after.items() if n > win.graph_breaks_before.get(r, 0)
        }
        guarded = getattr(result, "guarded_code", result if hasattr(result, "guard_manager") else None)
        if guarded is None and hasattr(result, "check_fn"):
            guarded = result  # torch 2.4: GuardedCode(code, check_fn), where check_fn is the guard manager
        gm = getattr(guarded, "guard_manager", None)
        if gm is None and hasattr(check_fn := getattr(guarded, "check_fn", None), "root"):
            gm = check_fn
        if gm is not None:
            # the tree now, while it surely exists (dynaprof must not keep compiled code alive, and
            # a script may drop it at once); the costly printout later, if it still exists then
            self._emit_guard_stats(win.key, gm, guard_tree_stats)
            try:
                self._pending_guards.append((win.key, weakref.ref(gm)))
            except TypeError:  # no weak references to it: measure now rather than hold it
                self._emit_guard_stats(win.key, gm, guard_text_stats)
        props: list[Prop] = [
            {**p.record, "instances": len(p.instances), "seconds": stored_s(p.record["seconds"])}
            for p in win.props.values()
        ]
        inlines = "inlines" in self.hooks and not win.aux
        rec: CompileEnd = {
            "t": "compile_end",
            "key": win.key,
            "duration": stored_s((end_ns - win.start_ns) / 1e9),
            "attempt": win.attempt,
            "exc": None if exc is None else f"{type(exc).__name__}: {exc}"[:4000],
            "graph_breaks": sum(new_breaks.values()) if self._counters is not None else None,
            "graph_break_sites": win.graph_break_sites,
            "inlines": win.inlines if inlines else None,
            "inlines_final": win.inlines_by_attempt.get(win.attempt, 0) if inlines else None,
            "recompile_reasons": win.recompile_reasons,
            "props": props,
        }
        if instructions is not None:
            rec["instructions"] = int(instructions)
        if not win.graph_break_sites:  # no break site seen (that hook missing): what torch's counters say
            rec["graph_break_reasons"] = [{"reason": r} for r in new_breaks]
        self.emit(rec)
        if self.erase_progress is not None:
            self.erase_progress()  # before the script runs on and prints
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is win:
                del stack[i]
                break
        self.traced.exit(win.tid, win.traced_base)  # in case an exception skipped a hook's exit
        if not stack:
            self.traced.forget(win.tid)
            if not stopped:
                self.on_window_end(win.tid)
        if len(self._pending_guards) > 256:
            self.flush_guards()
    def _on_chromium(self, event: dict[str, Any]) -> None:
        name, ph = str(event.get("name", "?")), event.get("ph")
        args = event.get("args") or {}
        tid = threading.get_ident()
        cid = args.get("compile_id")
        if ph == "B":
            self.spans.enter(tid, self.table.key_id((name, "", 0, "span")))
            if self._lazy:
                self._install_lazy()
        elif ph == "E":
            self.spans.exit_value(tid, self.table.key_id((name, "", 0, "span")))
        if ph == "B" and name.startswith("compile_attempt_"):
            win = self.current(tid)
            if win is not None and name[16:].isdigit():
                win.attempt = int(name[16:])
        aux = frame_keys.OWN_COMPILE_SPANS.get(name)
        if aux is not None and ph == "B":
            self._begin_aux(aux, None if cid is None else str(cid), tid, args)
        rec: SpanEvent = {
            "t": "span",
            "name": name,
            "ph": str(ph),
            "tid": tid,
            "ts": self.rel(float(event.get("ts", 0)) * 1000),
            "key": self._key_of(cid, tid),
        }
        if ph == "E" and (kept := span_args(name, args)):  # torch's E carries its B's metadata too
            rec["args"] = kept
        elif ph == "i" and (saved := args.get("time_saved_ns")) is not None:  # all a cache marker's read
            rec["args"] = {"time_saved_ns": saved}
        self.emit(rec)
        if aux is not None and ph == "E":
            self._end_aux(aux, tid)

    def _cause_id(self, key: FunctionKey) -> int:
        fid = self.table.key_id(key)
        self._cause_keys[fid] = key
        return fid

    def _node_cause_id(self, node: Any) -> int:
        meta = getattr(node, "meta", None)
        if not isinstance(meta, dict):
            return self._cause_id(node_causes.UNKNOWN)
        mods = meta.get("nn_module_stack")
        memo: tuple[Any, Any] | None = (
            meta.get("stack_trace"),
            next(reversed(mods), None) if isinstance(mods, dict) and mods else None,
        )
        try:
            cached = self._node_causes.get(memo)  # type: ignore[arg-type]
        except TypeError:  # an unhashable stack_trace
            cached, memo = None, None
        if cached is not None:
            return cached
        got = node_causes.node_cause(node)
        fid = self._cause_id(got if got is not None else node_causes.UNKNOWN)
        if memo is not None:
            self._node_causes[memo] = fid
        return fid

    def _kernel_parts(self, nodes: list[Any], ids: list[int]) -> node_causes.KernelParts:
        """Whose nodes a kernel is made of (``ids``: each node's cause id): all of them, the
        parametrization's, and both parts' causes."""
        distinct = {id(n): i for n, i in zip(nodes, ids, strict=True)}  # IR nodes share their origins
        keys = [self._cause_keys.get(i, node_causes.UNKNOWN) for i in distinct.values()]
        param, rest = node_causes.split_parts(keys)
        users = sorted({i for i, k in zip(distinct.values(), keys, strict=True) if k[3] == node_causes.CAUSE_USER})
        return node_causes.KernelParts(
            len(distinct), sum(1 for k in keys if k[3] == node_causes.CAUSE_PARAMETRIZATION),
            self._cause_id(param) if param is not None else -1, self._cause_id(rest) if rest is not None else -1,
            tuple(users),
        )  # fmt: skip

    def _combined_cause_id(self, ids: list[int]) -> int:
        """The cause of work for several nodes or kernels (``ids``: one per node, so a cause's
        count is its nodes'); combined causes are combined from their parts (a kernel's cause is
        itself a combination), so a label never nests."""
        parts: list[FunctionKey] = []
        for i in ids:
            if i in self._cause_parts:
                parts += self._cause_parts[i]
            elif i in self._cause_keys:
                parts.append(self._cause_keys[i])
        key = node_causes.combine(parts)
        fid = self._cause_id(key)
        if key not in parts:  # a new label (several parametrizations'): remember what it is made of
            self._cause_parts[fid] = frozenset(parts)
        return fid

    def _install_lazy(self) -> None:
        """Inductor's modules load on its first compile, after our hooks: wrap their classes at the
        first timed span after they are imported (before their work starts). A torch without
        phase events (2.4) has no such span: there a compile window's start and each FX node AOT
        autograd or Inductor starts on install them (``hooks.current_node.wrap_node_context``):
        Inductor's backend is imported before AOT autograd runs, and its codegen modules when a
        ``GraphLowering`` is made, before it lowers a node."""
        self._lazy = self._install_imported(self._lazy)

    def _install_imported(
        self, entries: list[tuple[str, str, Callable[[], None]]]
    ) -> list[tuple[str, str, Callable[[], None]]]:
        """Install the entries whose module is imported now; the others are still pending."""
        pending = []
        for module, what, install in entries:
            if module not in sys.modules:
                pending.append((module, what, install))
                continue
            try:
                install()
            except Exception as e:
                self.warn(f"{what} not captured ({type(e).__name__}: {e})")
        return pending

    # -- end of run ---------------------------------------------------------------------------
    def flush_guards(self) -> None:
        """Measure the printed guards of the compiles so far (a reset, the end of the run, every
        256 compiles); and warn of the hooks left out whose module is imported now."""
        self._warn_unhooked()
        pending, self._pending_guards = self._pending_guards, []
        freed = 0
        for key, ref in pending:
            gm = ref()
            if gm is None:
                freed += 1
                continue
            self._emit_guard_stats(key, gm, guard_text_stats)
            gm = None
        if freed:
            self.warn(
                f"guard code sizes of {plural(freed, 'compile')} are unknown: the script freed the compiled code "
                "before dynaprof printed its guards (it never keeps it alive); guard counts are known"
            )

    def _emit_guard_stats(self, key: str, gm: Any, measure: Callable[[Any], GuardSizes]) -> None:
        try:
            stats = measure(gm)
        except Exception as e:
            stats = {"error": f"{type(e).__name__}: {e}"}
        self.emit({"t": "guards", "key": key, **stats})

    def unfinished(self) -> list[Window]:
        return [w for stack in self.windows.values() for w in stack]

