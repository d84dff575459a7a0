"""Every touch of torch's private APIs, each guarded. Torch 2.4 through 2.13+.

Hooks (each one optional; what could not be installed is reported as a warning and the facts it
would have given are recorded as unknown):

* ``convert_frame._compile``: wrapped to mark each frame compile (id, code, thread, wall time,
  call site, outcome) and to start/stop the sampler.
* ``utils.record_chromium_event_internal`` (2.5+): Dynamo's phase spans, cheaply (no payloads).
* ``utils.log_compilation_event``: the CompilationMetrics of each compile; a backward's
  (``is_forward=False``) go to that backward compile, not to its forward frame.
* the same chromium hook opens a compile window for work that is not a Dynamo frame compile:
  AOT autograd's lazy backward compile (``entire_backward_compile``, at the first ``.backward()``,
  under its forward's compile id) and compiled autograd's capture of the autograd graph
  (``compiled_autograd``, compile id ``!N``). So they are timed, sampled and attributed like
  forward compiles (the cause hooks below record only inside a window).
* ``torch._dynamo.reset``: counts reset generations (compile ids restart at 0/0 after it).
* ``UserDefinedObjectVariable.resolve_data_descriptor``: exact time and count per traced
  ``@property`` (parametrizations inject one per parameter).
* ``InliningInstructionTranslator.inline_call``: inlined-call counts.
* ``InstructionTranslatorBase.run``: the traced user stack for samples (pushed and popped as ids
  on ``TracedStacks``: samples never read frame locals) and the attempt index (one root
  translator runs per attempt).
* provenance for AOT autograd and Inductor (``capture/provenance.py``): the FX node being worked
  on, from ``Interpreter._set_current_node`` (AOT tracing, fake-tensor propagation) and, installed
  once Inductor is imported, ``GraphLowering.set_current_node`` (lowering), the scheduling
  backends' ``codegen_node`` and ``define_kernel`` (kernel -> origin nodes), and
  ``AsyncCompile._wait_futures`` (waiting on compile workers for those kernels). Each pushes the
  node's cause id on a per-thread stack; a sample copies the innermost one, and the innermost of
  torch's own timed spans (from the phase events) beside it.
* ``InstructionTranslatorBase.log_graph_break``: where each graph break happened.
* ``convert_frame.get_and_maybe_log_recompilation_reasons``: every failing guard of every cache
  entry (torch's metrics keep only the first entry's); strings only, the frame is never kept.
* ``SubmodCompiler.compile_submod`` (``hook_ddp_buckets``): each per-bucket subgraph compile of
  DDP's graph split (``optimize_ddp``), as a ``ddp_bucket submod_N`` span of the frame's compile.
* ``config.dynamo_profiler`` + ``DynamoProfilerState.dump_stats`` (2.13): torch's own per-inline
  tracing times, captured silently.
* ``decorators.disable`` as ``OutputGraph.compile_and_call_fx_graph`` calls it on the backend's
  compiled graph (``calls``): the graph is wrapped, inside torch's own ``disable`` wrapper (so
  Dynamo never traces the counter), with a counter of its calls, keyed by the frame compile.
  An entry's calls are its graphs' most (a frame with no graph: unknown), written at the end.
* guard trees via the returned ``GuardedCode.guard_manager`` (sizes computed after the run, so
  the walk never inflates compile time).
* the compiler settings that differ from their defaults (``config_changes``), read once at the end
  through each config module's entries (2.6+: ``_config`` entries and ``_is_default``; 2.4/2.5:
  the ``_config`` and ``_default`` value dicts).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import re
import statistics
import sys
import threading
import time
import traceback
import types
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dynaprof.capture import cache_keys, kernel_builds, provenance
from dynaprof.capture.progress import child_eraser
from dynaprof.capture.stacks import FunctionKey, FunctionTable, Markers, TracedStacks
from dynaprof.fmt import plural
from dynaprof.model.journal import (
    DDP_BUCKET_SPAN,
    METRICS_DROP,
    METRICS_LISTS,
    CompileEnd,
    CompileStart,
    FrameKind,
    GraphBreakSite,
    GuardSizes,
    JournalRecord,
    LocationItem,
    Metrics,
    MetricValue,
    Prop,
    SpanEvent,
    Torch,
    span_args,
)

PARAMETRIZE_MODULE = "torch.nn.utils.parametrize"
#: chromium spans that are compiles of their own (not Dynamo frames): span name -> frame kind
AUX_WINDOWS: dict[str, FrameKind] = {"entire_backward_compile": "backward", "compiled_autograd": "compiled_autograd"}
_GUARD_SOURCE = re.compile(r"#\s*(?:[^#]*?#\s*)?([^\s#][^#]*?):(\d+) in ([\w<>.]+)\s*$")


def _private(module: str) -> Any:
    """Import a torch-internal module, typed as Any: these APIs are private and move."""
    return importlib.import_module(module)


@dataclass
class PropStat:
    label: str
    owner: str
    name: str
    getter_file: str
    getter_line: int
    parametrized: bool
    count: int = 0
    seconds: float = 0.0
    instances: set[int] = field(default_factory=set)


@dataclass
class Window:
    key: str
    compile_id: str
    tid: int
    start_ns: int
    attempt: int = 0
    graph_breaks_before: dict[str, int] = field(default_factory=dict)
    graph_break_sites: list[GraphBreakSite] = field(default_factory=list)
    props: dict[tuple[str, str], PropStat] = field(default_factory=dict)
    prop_depth: int = 0
    inlines: int = 0
    #: inlined calls per attempt (restarts throw the earlier attempts' away)
    inlines_by_attempt: dict[int, int] = field(default_factory=dict)
    #: every cache entry's guard failures, as torch's recompiles log lists them (None: not seen)
    recompile_reasons: list[str] | None = None
    #: depth of the thread's traced stack when this compile began, and root translator runs so far
    traced_base: int = 0
    root_runs: int = 0
    #: Inductor kernel name -> cause id of its origin nodes (names repeat across graphs)
    kernels: dict[str, int] = field(default_factory=dict)
    #: kernels handed to a compile worker and not waited for yet, and each one's build seconds as
    #: the worker measured them (``capture.kernel_builds``)
    kernel_pending: set[str] = field(default_factory=set)
    kernel_worker_s: dict[str, float] = field(default_factory=dict)
    #: forward (a Dynamo frame compile), backward (AOT autograd's lazy backward compile) or
    #: compiled_autograd (compiled autograd's capture of the autograd graph)
    kind: FrameKind = "forward"
    #: opened from a phase event (``AUX_WINDOWS``), not by Dynamo's frame compile: no guards, no inlines
    aux: bool = False


class _CodeInfo(NamedTuple):
    """What a ``compile_start`` record says of the compiled code (a backward's: its forward's)."""

    name: str
    file: str
    line: int
    wrapped: LocationItem | None = None


def property_key(vt: Any, name: str, type_attr: Any) -> tuple[FunctionKey, PropStat] | None:
    """Label a property Dynamo resolves: ("Linear.weight", ...) for parametrized Linear."""
    fget = getattr(type_attr, "fget", None)
    if not isinstance(type_attr, property) or fget is None:
        return None
    value = getattr(vt, "value", None)
    owner = type(value).__name__ if value is not None else "?"
    plain = isinstance(fget, types.FunctionType)  # anything else could run user code on getattr
    parametrized = plain and fget.__module__ == PARAMETRIZE_MODULE
    shown = owner
    if parametrized and owner.startswith("Parametrized") and len(owner) > len("Parametrized"):
        shown = owner[len("Parametrized") :]  # the user's class: ParametrizedLinear -> Linear
    label = f"{shown}.{name}"
    code = fget.__code__ if plain else None
    gfile = code.co_filename if code is not None else "?"
    gline = code.co_firstlineno if code is not None else 0
    return (label, gfile, gline, "property"), PropStat(label, owner, name, gfile, gline, parametrized)


def _user_frame(filename: str) -> bool:
    f = filename.replace("\\", "/")
    return not ("/torch/" in f or "/dynaprof/" in f or f.startswith("<frozen") or "/runpy.py" in f)


def call_site(limit: int = 12) -> list[list[Any]]:
    """The user frames (outermost first) on the current thread that led to this compile."""
    out = []
    f = sys._getframe(2)
    while f is not None:
        # the child's bootstrap (``python -c ...``) is the outermost frame, <string>:1: not user code
        boot = f.f_back is None and f.f_code.co_filename == "<string>"
        if not boot and _user_frame(f.f_code.co_filename):
            out.append([f.f_code.co_name, f.f_code.co_filename, f.f_lineno])
        f = f.f_back  # type: ignore[assignment]
    return list(reversed(out[:limit]))


def _is_module_class(cls: type) -> bool:
    return any(k.__name__ == "Module" and k.__module__ == "torch.nn.modules.module" for k in cls.__mro__)


def wrapped_callable(code: Any, closure: Any) -> list[Any] | None:
    """The user callable behind torch's wrapper frame, as ``[label, file, line]``.

    ``torch.compile(module)`` compiles ``external_utils.wrap_inline``'s ``inner``, whose closure
    cell ``fn`` holds the module: its class and its ``forward`` are what the user wrote. Reads
    only the closure torch passes to ``_compile`` and class dictionaries (no descriptor, no user
    code runs); keeps no reference."""
    filename = str(getattr(code, "co_filename", "")).replace("\\", "/")
    freevars = getattr(code, "co_freevars", ())
    if "/torch/" not in filename or "fn" not in freevars or not isinstance(closure, tuple):
        return None
    try:
        obj = closure[freevars.index("fn")].cell_contents
    except (IndexError, ValueError, AttributeError):
        return None
    cls = type(obj)
    label: str | None = None
    target: Any = None
    if cls is types.FunctionType:
        label, target = str(obj.__qualname__), obj
    elif cls is types.MethodType:
        target = obj.__func__
        label = str(getattr(target, "__qualname__", "?"))
    elif _is_module_class(cls):
        label = cls.__name__
        target = next((k.__dict__["forward"] for k in cls.__mro__ if "forward" in k.__dict__), None)
    obj = None
    fcode = getattr(target, "__code__", None) if type(target) is types.FunctionType else None
    if label is None or fcode is None:
        return None
    return [label, fcode.co_filename, fcode.co_firstlineno]


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


def _attempt_loop_codes(module: Any) -> set[Any]:
    """Code objects of convert_frame that hold the restart loop's ``attempt`` local (2.13:
    compile_frame; 2.4: _compile.<locals>.compile_inner), nested functions included."""
    found: set[Any] = set()
    todo = []
    for v in list(vars(module).values()):
        try:
            todo.append(getattr(inspect.unwrap(v), "__code__", None))
        except Exception:  # odd objects (mocks, cycles of __wrapped__) are not functions we want
            continue
    while todo:
        code = todo.pop()
        if code is None or not hasattr(code, "co_varnames"):
            continue
        if "attempt" in code.co_varnames and code.co_filename == getattr(module, "__file__", None):
            found.add(code)
        todo.extend(c for c in code.co_consts if hasattr(c, "co_varnames"))
    return found


def _current_attempt() -> int | None:
    """The attempt of the compile running on this thread (its restarts), where torch says."""
    try:
        trace_id = _private("torch._guards").CompileContext.current_trace_id()
    except Exception:
        return None
    attempt = getattr(trace_id, "attempt", None)
    return attempt if isinstance(attempt, int) else None


def _scalar_metrics(m: Any) -> dict[str, MetricValue]:
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


def guard_stats(gm: Any) -> GuardSizes:
    """Size of a compiled frame's guard set: C++ tree leaves/managers/depth, printed code size."""
    return {**guard_tree_stats(gm), **guard_text_stats(gm)}


def guard_tree_stats(gm: Any) -> GuardSizes:
    """Leaves, managers and depth of the C++ guard tree (~15 ms for the seed's 1,300 managers)."""
    stats: GuardSizes = {}
    root = getattr(gm, "root", None)
    if root is not None and hasattr(root, "get_leaf_guards"):
        # keyed by id() but holding the objects: pybind hands out the same wrapper for a shared
        # (relational) guard, which is what must be counted once; a freed wrapper's id could be
        # reused by the next one and undercount the rest
        leaves: dict[int, Any] = {}
        managers = 0
        depth = 0
        todo: list[tuple[Any, int]] = [(root, 0)]  # depth: levels below the root
        while todo:
            mgr, d = todo.pop()
            managers += 1
            depth = max(depth, d)
            for leaf in mgr.get_leaf_guards():
                leaves[id(leaf)] = leaf
            children = list(mgr.get_child_managers())
            if hasattr(mgr, "get_key_value_managers"):
                for pair in mgr.get_key_value_managers().values():
                    children.extend(x for x in pair if x is not None)
            todo.extend((c, d + 1) for c in children)
        if hasattr(root, "get_epilogue_lambda_guards"):
            leaves.update((id(g), g) for g in root.get_epilogue_lambda_guards())
        stats["tree_leaf_count"], stats["tree_manager_count"], stats["tree_depth"] = len(leaves), managers, depth
    return stats


def guard_text_stats(gm: Any) -> GuardSizes:
    """Size of the printed guard code and where its guards come from (printing it is the costly
    part: ~15 ms and 0.8 MB for the seed)."""
    stats: GuardSizes = {}
    try:
        text = str(gm)
    except Exception:
        text = ""
    if text and not text.startswith("<"):
        lines = text.splitlines()
        stats["code_text_chars"], stats["code_text_lines"] = len(text), len(lines)
        sources: dict[str, int] = {}
        for line in lines:
            m = _GUARD_SOURCE.search(line)
            if m:
                src = f"{m.group(1).strip()}:{m.group(3)}"
                sources[src] = sources.get(src, 0) + 1
        stats["sources"] = dict(sorted(sources.items(), key=lambda kv: -kv[1])[:40])
    return stats


#: the compiler config modules whose changed settings are recorded: (short name, module)
CONFIG_MODULES = (("dynamo", "torch._dynamo.config"), ("inductor", "torch._inductor.config"),
                  ("functorch", "torch._functorch.config"))
#: the longest repr kept of a setting's value or default
MAX_CONFIG_REPR = 200
_NO_DEFAULT = object()


def _config_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= MAX_CONFIG_REPR else text[:MAX_CONFIG_REPR] + "..."


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _module_changes(short: str, mod: Any) -> list[list[str]]:
    """One config module's settings that differ from their defaults, sorted by name."""
    entries = getattr(mod, "_config", None)
    if not isinstance(entries, dict):
        raise AttributeError("no _config table")
    out: list[list[str]] = []
    if hasattr(mod, "_is_default"):  # 2.6+: _ConfigEntry objects (the env-set ones count as changed)
        for key in sorted(entries):
            entry = entries[key]
            if getattr(entry, "hide", False) or getattr(entry, "alias", None) or mod._is_default(key):
                continue
            value, default = getattr(mod, key), getattr(entry, "default", _NO_DEFAULT)
            if default is not _NO_DEFAULT and _same(value, default):
                continue
            out.append([short, key, _config_repr(value), "?" if default is _NO_DEFAULT else _config_repr(default)])
        return out
    defaults = getattr(mod, "_default", None)  # 2.4/2.5: values in _config, defaults in _default
    if not isinstance(defaults, dict):
        raise AttributeError("no _default table")
    for key in sorted(entries):
        value, default = entries[key], defaults.get(key, _NO_DEFAULT)
        if default is _NO_DEFAULT or not _same(value, default):
            out.append([short, key, _config_repr(value), "?" if default is _NO_DEFAULT else _config_repr(default)])
    return out


def config_changes(skip: frozenset[tuple[str, str]] = frozenset()) -> tuple[list[list[str]], list[str]]:
    """``[module, name, value, default]`` for every setting of the imported compiler config modules
    that differs from its default (``skip``: the ones dynaprof set itself), and a note per module
    that could not be read. A module never imported is left out: its settings are the defaults,
    less what environment variables change (recorded beside it)."""
    changes: list[list[str]] = []
    errors: list[str] = []
    for short, name in CONFIG_MODULES:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        try:
            with warnings.catch_warnings():  # reading a deprecated setting warns
                warnings.simplefilter("ignore")
                changes += [c for c in _module_changes(short, mod) if (c[0], c[1]) not in skip]
        except Exception as e:
            errors.append(f"{short} config not read on torch {_torch_version()} ({type(e).__name__}: {e})"[:300])
    return changes, errors


def _torch_version() -> str:
    torch = sys.modules.get("torch")
    return str(getattr(torch, "__version__", "?"))


def torch_git_version() -> str | None:
    """``torch.version.git_version``, the commit torch was built from (None where it is missing)."""
    version = getattr(sys.modules.get("torch"), "version", None)
    git = getattr(version, "git_version", None)
    return git if isinstance(git, str) and git and git != "Unknown" else None


class Recorder:
    """Owns the hooks and the per-thread compile windows of one profiled process."""

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
        self.spans = TracedStacks()  # ids of torch's open timed spans, per thread
        self.causes = TracedStacks()  # cause ids of the FX nodes being worked on, per thread
        self._cause_keys: dict[int, FunctionKey] = {}
        self._cause_parts: dict[int, frozenset[FunctionKey]] = {}  # a combined cause's single-node causes
        self._node_causes: dict[tuple[Any, Any], int] = {}
        self._lazy: list[tuple[str, str, Callable[[], None]]] = []
        self._knows_attempt = False
        self._counters: Any = None
        #: frame key -> what its compile_start said (name, file, line, wrapped): backward reuses it
        self._frame_info: dict[str, _CodeInfo] = {}
        self._bw_key_by_cid: dict[str, str] = {}  # latest backward key of each compile id
        #: frame key -> one call counter per compiled graph of that compile: [calls, total ns,
        #: durations ns...] (the timing part only with ``time_calls``)
        self.call_counters: dict[str, list[list[int]]] = {}
        #: time each call of a graph compiled from now on (``--time-calls``)
        self.time_calls = False
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
        return round((epoch_ns - self.t0_ns) / 1e9, 6)

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
        """The compile id, made unique: after a reset ids repeat, so later ones get "#<gen>"."""
        key = compile_id
        if key in self._keys_used:
            key = f"{compile_id}#{self.generation}"
        base, n = key, 1
        while key in self._keys_used:
            n += 1
            key = f"{base}~{n}"
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

    def emit_functions(self) -> None:
        new = self.table.take_new()
        if new:
            self.emit({"t": "fn", "items": new})

    # -- installation -------------------------------------------------------------------------
    def install(self, *, inline_profile: bool = True) -> None:
        import torch

        record: Torch = {"t": "torch", "version": str(torch.__version__)}
        git = torch_git_version()
        if git:
            record["git"] = git
        self.emit(record)
        steps: list[tuple[str, Callable[[], None]]] = [
            ("compile_windows", self._hook_compile),
            ("phases", self._hook_chromium),
            ("metrics", self._hook_metrics),
            ("reset", self._hook_reset),
            ("properties", self._hook_properties),
            ("traced_stack", self._hook_translator_run),
            ("provenance", self._hook_provenance),
            ("inlines", self._hook_inlines),
            ("graph_breaks", self._hook_graph_breaks),
            ("recompile_reasons", self._hook_recompile_reasons),
            ("ddp_buckets", functools.partial(hook_ddp_buckets, self)),
            ("calls", self._hook_calls),
            ("markers", self._install_markers),
            ("cache_keys", functools.partial(cache_keys.install_cache_hooks, self)),
        ]
        if inline_profile:
            steps.append(("dynamo_profiler", self._hook_dynamo_profiler))
        for name, fn in steps:
            try:
                fn()
                self.hooks.append(name)
            except Exception as e:  # a moved internal must not break the user's run
                self.warn(f"torch {torch.__version__}: {name} not captured ({type(e).__name__}: {e})")
        self.emit({"t": "hooks", "items": self.hooks})
        self._knows_attempt = "phases" in self.hooks or "traced_stack" in self.hooks
        if "phases" not in self.hooks:
            self.warn(
                f"torch {torch.__version__}: lazy backward compiles (at the first .backward()) are not sampled: "
                "they are found from torch's phase events, which this torch does not have; their metrics, where "
                "torch logs them, still become backward frames"
            )

    def _hook_compile(self) -> None:
        cf = _private("torch._dynamo.convert_frame")
        counters = _private("torch._dynamo.utils").counters

        self._counters = counters
        orig = cf._compile
        self._compile_code = orig.__code__
        recorder = self

        @functools.wraps(orig)
        def _compile(*args: Any, **kwargs: Any) -> Any:
            code = args[0] if args else kwargs.get("code")
            cid = kwargs.get("compile_id")
            closure = args[4] if len(args) > 4 else kwargs.get("closure")
            win = recorder._begin(code, None if cid is None else str(cid), closure)
            try:
                result = orig(*args, **kwargs)
            except BaseException as e:
                recorder._end(win, None, e)
                raise
            recorder._end(win, result, None)
            return result

        cf._compile = _compile

    def _hook_calls(self) -> None:
        decorators = _private("torch._dynamo.decorators")
        og = _private("torch._dynamo.output_graph")
        target = inspect.unwrap(og.OutputGraph.compile_and_call_fx_graph).__code__
        orig = decorators.disable
        recorder = self

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
        if cid.startswith("!"):
            win.kind = "compiled_autograd"  # Dynamo compiling the graph compiled autograd captured
        try:
            wrapped = wrapped_callable(code, closure)
        except Exception:
            wrapped = None
        info = _CodeInfo(
            str(getattr(code, "co_name", "?")), str(getattr(code, "co_filename", "?")),
            int(getattr(code, "co_firstlineno", 0)), wrapped,
        )  # fmt: skip
        self._frame_info[win.key] = info
        self._open(win, info)
        return win

    def _open(self, win: Window, info: _CodeInfo, fwd: str | None = None) -> None:
        tid = win.tid
        win.traced_base = self.traced.depth(tid)
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
        """Open a window for a compile that is not a Dynamo frame (``AUX_WINDOWS``)."""
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
            key, n = f"{fwd}:bw", 1
            while key in self._keys_used:
                n += 1
                key = f"{fwd}:bw{n}"
            self._keys_used.add(key)
            self._bw_key_by_cid[cid] = key
            info = self._frame_info.get(fwd) or _CodeInfo("backward", "?", 0)
            of: str | None = fwd
        else:
            key = self._key_for(cid)
            graph = args.get("graph_id")
            info = _CodeInfo("compiled autograd" + (f" graph {graph}" if isinstance(graph, int) else ""),
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
        gm = getattr(guarded, "guard_manager", None)
        if gm is not None:
            # the tree now, while it surely exists (dynaprof must not keep compiled code alive, and
            # a script may drop it at once); the costly printout later, if it still exists then
            self._emit_guard_stats(win.key, gm, guard_tree_stats)
            try:
                self._pending_guards.append((win.key, weakref.ref(gm)))
            except TypeError:  # no weak references to it: measure now rather than hold it
                self._emit_guard_stats(win.key, gm, guard_text_stats)
        props: list[Prop] = [
            {
                "label": p.label,
                "owner": p.owner,
                "name": p.name,
                "getter_file": p.getter_file,
                "getter_line": p.getter_line,
                "parametrized": p.parametrized,
                "count": p.count,
                "instances": len(p.instances),
                "seconds": round(p.seconds, 6),
            }
            for p in win.props.values()
        ]
        inlines = "inlines" in self.hooks and not win.aux
        rec: CompileEnd = {
            "t": "compile_end",
            "key": win.key,
            "duration": round((end_ns - win.start_ns) / 1e9, 6),
            "attempt": win.attempt,
            "exc": None if exc is None else f"{type(exc).__name__}: {exc}"[:4000],
            "graph_breaks": sum(new_breaks.values()) if self._counters is not None else None,
            "graph_break_sites": win.graph_break_sites,
            "inlines": win.inlines if inlines else None,
            "inlines_final": win.inlines_by_attempt.get(win.attempt, 0) if inlines else None,
            "recompile_reasons": win.recompile_reasons,
            "props": props,
        }
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

    def _hook_chromium(self) -> None:
        du = _private("torch._dynamo.utils")

        orig = du.record_chromium_event_internal

        @functools.wraps(orig)
        def record(event: Any, *a: Any, **k: Any) -> Any:
            try:
                self._on_chromium(event)
            except Exception:
                pass
            return orig(event, *a, **k)

        du.record_chromium_event_internal = record

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
        aux = AUX_WINDOWS.get(name)
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

    def _hook_metrics(self) -> None:
        du = _private("torch._dynamo.utils")

        orig = du.log_compilation_event

        @functools.wraps(orig)
        def log(metrics: Any, *a: Any, **k: Any) -> Any:
            try:
                if getattr(metrics, "is_runtime", None) is not True:  # run-time autotuning: no compile's
                    self._emit_metrics(metrics)
            except Exception:
                pass
            return orig(metrics, *a, **k)

        du.log_compilation_event = log

    def _emit_metrics(self, metrics: Any) -> None:
        tid = threading.get_ident()
        cid = getattr(metrics, "compile_id", None)
        rec: Metrics = {"t": "metrics", "key": None, "m": _scalar_metrics(metrics)}
        if getattr(metrics, "is_forward", None) is False and cid is not None:
            # a lazy backward compile's metrics (logged as its window closes): never its forward's;
            # without a window (no phase events) the record says whose they are
            rec["key"] = self._bw_key_by_cid.pop(str(cid), None)
            if rec["key"] is None:
                rec["kind"], rec["fwd"], rec["tid"] = "backward", self._key_by_cid.get(str(cid), str(cid)), tid
                start_us = getattr(metrics, "start_time_us", None)
                if isinstance(start_us, int):
                    rec["ts"] = self.rel(start_us * 1000)
        else:
            rec["key"] = self._key_of(None if cid is None else str(cid), tid)
            attempt = _current_attempt()
            if attempt is not None:
                rec["attempt"] = attempt
        self.emit(rec)

    def _hook_reset(self) -> None:
        dynamo = _private("torch._dynamo")

        orig = dynamo.reset

        @functools.wraps(orig)
        def reset(*a: Any, **k: Any) -> Any:
            self.flush_guards()
            out = orig(*a, **k)
            self.generation += 1  # in the keys and compile_start records of the compiles after it
            return out

        dynamo.reset = reset  # torch.compiler.reset() calls torch._dynamo.reset() by attribute: covered

    def _hook_properties(self) -> None:
        UDO = _private("torch._dynamo.variables.user_defined").UserDefinedObjectVariable

        orig = UDO.resolve_data_descriptor
        self._rdd_code = orig.__code__
        recorder = self

        @functools.wraps(orig)
        def resolve_data_descriptor(vt: Any, tx: Any, name: Any, type_attr: Any, *a: Any, **k: Any) -> Any:
            tid = threading.get_ident()
            win = recorder.current(tid)
            if win is None or not isinstance(type_attr, property):
                return orig(vt, tx, name, type_attr, *a, **k)
            got = property_key(vt, str(name), type_attr)
            depth = recorder.traced.enter(tid, recorder.table.key_id(got[0])) if got is not None else None
            outer = win.prop_depth == 0
            win.prop_depth += 1
            t = time.perf_counter_ns()
            try:
                return orig(vt, tx, name, type_attr, *a, **k)
            finally:
                win.prop_depth -= 1
                if depth is not None:
                    recorder.traced.exit(tid, depth)
                if got is not None:
                    recorder._count_property(win, vt, got, (time.perf_counter_ns() - t) / 1e9, outer)

        UDO.resolve_data_descriptor = resolve_data_descriptor

    def _count_property(
        self, win: Window, vt: Any, got: tuple[FunctionKey, PropStat], seconds: float, outer: bool
    ) -> None:
        (label, gfile, _gline, _kind), fresh = got
        stat = win.props.setdefault((label, gfile), fresh)
        stat.count += 1
        stat.instances.add(id(getattr(vt, "value", vt)))
        if outer:
            stat.seconds += seconds

    def _hook_translator_run(self) -> None:
        ITB = _private("torch._dynamo.symbolic_convert").InstructionTranslatorBase

        orig = ITB.run
        recorder = self
        traced = self.traced

        @functools.wraps(orig)
        def run(tx: Any, *a: Any, **k: Any) -> Any:
            tid = threading.get_ident()
            win = recorder.current(tid)
            code = getattr(tx, "f_code", None)
            if win is None or code is None:
                return orig(tx, *a, **k)
            if traced.depth(tid) <= win.traced_base:  # the root translator: one per attempt
                win.root_runs += 1
                win.attempt = win.root_runs - 1
            depth = traced.enter(tid, recorder.table.code_id(code, "traced"))
            try:
                return orig(tx, *a, **k)
            finally:
                traced.exit(tid, depth)

        ITB.run = run

    # -- provenance: the FX node AOT autograd and Inductor work on ------------------------------
    def _cause_id(self, key: FunctionKey) -> int:
        fid = self.table.key_id(key)
        self._cause_keys[fid] = key
        return fid

    def _node_cause_id(self, node: Any) -> int:
        meta = getattr(node, "meta", None)
        if not isinstance(meta, dict):
            return self._cause_id(provenance.UNKNOWN)
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
        got = provenance.node_cause(node)
        fid = self._cause_id(got if got is not None else provenance.UNKNOWN)
        if memo is not None:
            self._node_causes[memo] = fid
        return fid

    def _combined_cause_id(self, ids: list[int]) -> int:
        """The cause of work for several nodes or kernels; combined causes are combined from their
        parts (a kernel's cause is itself a combination), so a label never nests."""
        parts: set[FunctionKey] = set()
        for i in set(ids):
            if i in self._cause_parts:
                parts |= self._cause_parts[i]
            elif i in self._cause_keys:
                parts.add(self._cause_keys[i])
        fid = self._cause_id(provenance.combine(parts))
        if len(parts) > 1:
            self._cause_parts[fid] = frozenset(parts)
        return fid

    def _wrap_node_context(self, owner: Any, attr: str) -> None:
        """Wrap a ``@contextmanager`` method ``(self, node)`` that brackets work on one FX node."""
        orig = getattr(owner, attr)
        recorder = self
        causes = self.causes

        @functools.wraps(orig)
        @contextlib.contextmanager
        def wrapper(this: Any, node: Any, *a: Any, **k: Any) -> Any:
            tid = threading.get_ident()
            if recorder.current(tid) is None:
                with orig(this, node, *a, **k):
                    yield
                return
            depth = causes.enter(tid, recorder._node_cause_id(node))
            try:
                with orig(this, node, *a, **k):
                    yield
            finally:
                causes.exit(tid, depth)

        setattr(owner, attr, wrapper)

    def _wrap_scheduled(self, owner: Any, attr: str, nodes_arg: int) -> None:
        """Wrap a method whose argument ``nodes_arg`` (after self) holds Inductor scheduler nodes;
        for ``define_kernel`` also remember the kernel name it returns."""
        orig = owner.__dict__[attr]
        recorder = self
        causes = self.causes
        defines = attr == "define_kernel"

        @functools.wraps(orig)
        def wrapper(this: Any, *a: Any, **k: Any) -> Any:
            tid = threading.get_ident()
            win = recorder.current(tid)
            if win is None or len(a) <= nodes_arg:
                return orig(this, *a, **k)
            arg = a[nodes_arg]
            fx = provenance.fx_nodes_of(arg if isinstance(arg, (list, tuple)) else [arg])
            cid = recorder._combined_cause_id([recorder._node_cause_id(n) for n in fx])
            depth = causes.enter(tid, cid)
            try:
                out = orig(this, *a, **k)
            finally:
                causes.exit(tid, depth)
            if defines and isinstance(out, str):
                win.kernels[out] = cid
            return out

        setattr(owner, attr, wrapper)

    def _hook_provenance(self) -> None:
        interp = _private("torch.fx.interpreter").Interpreter
        self._wrap_node_context(interp, "_set_current_node")
        self._lazy = [("torch._inductor.graph", "lowering", self._hook_lowering)]
        for backend in ("cpp", "simd", "triton"):
            module = f"torch._inductor.codegen.{backend}"
            self._lazy.append((module, f"{backend} codegen", functools.partial(self._hook_scheduling, module)))
        builds = functools.partial(kernel_builds.install, self)
        self._lazy.append(("torch._inductor.async_compile", "kernel builds", builds))

    def _install_lazy(self) -> None:
        """Inductor's modules load on its first compile, after our hooks: wrap their classes at the
        first timed span after they are imported (before their work starts)."""
        pending = []
        for module, what, install in self._lazy:
            if module not in sys.modules:
                pending.append((module, what, install))
                continue
            try:
                install()
            except Exception as e:
                self.warn(f"provenance: {what} not captured ({type(e).__name__}: {e}); that time shows as whole graph")
        self._lazy = pending

    def _hook_lowering(self) -> None:
        self._wrap_node_context(_private("torch._inductor.graph").GraphLowering, "set_current_node")

    def _hook_scheduling(self, module: str) -> None:
        mod = sys.modules[module]
        for obj in list(vars(mod).values()):
            if not isinstance(obj, type) or obj.__module__ != module or not obj.__name__.endswith("Scheduling"):
                continue
            if "codegen_node" in obj.__dict__:
                self._wrap_scheduled(obj, "codegen_node", 0)
            if "define_kernel" in obj.__dict__:
                self._wrap_scheduled(obj, "define_kernel", 1)

    def _hook_inlines(self) -> None:
        IIT = _private("torch._dynamo.symbolic_convert").InliningInstructionTranslator

        orig = IIT.inline_call.__func__
        recorder = self

        def inline_call(cls: Any, *a: Any, **k: Any) -> Any:
            win = recorder.current(threading.get_ident())
            if win is not None:
                win.inlines += 1
                win.inlines_by_attempt[win.attempt] = win.inlines_by_attempt.get(win.attempt, 0) + 1
            return orig(cls, *a, **k)

        IIT.inline_call = classmethod(functools.wraps(orig)(inline_call))

    def _hook_graph_breaks(self) -> None:
        ITB = _private("torch._dynamo.symbolic_convert").InstructionTranslatorBase

        orig = ITB.log_graph_break
        recorder = self

        @functools.wraps(orig)
        def log_graph_break(tx: Any, code_options: Any, reason: Any, exc: Any, *a: Any, **k: Any) -> Any:
            try:
                win = recorder.current(threading.get_ident())
                if win is not None and not getattr(exc, "logged", False):
                    f_code = getattr(tx, "f_code", None)
                    win.graph_break_sites.append(
                        {
                            "reason": str(reason)[:2000],
                            "file": getattr(f_code, "co_filename", None),
                            "line": getattr(tx, "lineno", None),
                        }
                    )
            except Exception:
                pass
            return orig(tx, code_options, reason, exc, *a, **k)

        ITB.log_graph_break = log_graph_break

    def _hook_recompile_reasons(self) -> None:
        cf = _private("torch._dynamo.convert_frame")
        name = next((n for n in ("get_and_maybe_log_recompilation_reasons", "get_and_maybe_log_recompilation_reason")
                     if callable(getattr(cf, n, None))), None)
        if name is None:
            raise AttributeError("convert_frame has no get_and_maybe_log_recompilation_reason(s)")
        orig = getattr(cf, name)
        recorder = self

        @functools.wraps(orig)
        def reasons(*a: Any, **k: Any) -> Any:
            out = orig(*a, **k)
            try:
                win = recorder.current(threading.get_ident())
                if win is not None and isinstance(out, (list, tuple)):
                    win.recompile_reasons = [str(r)[:4000] for r in out][:64]  # strings only
            except Exception:
                pass
            return out

        setattr(cf, name, reasons)

    def _install_markers(self) -> None:
        """The compile entry for every walker; the rest only for the legacy walker (test-only),
        which reads them through frame locals."""
        cf = _private("torch._dynamo.convert_frame")
        ITB = _private("torch._dynamo.symbolic_convert").InstructionTranslatorBase

        run_code = inspect.unwrap(ITB.run).__code__
        prop_codes = frozenset({self._rdd_code}) if hasattr(self, "_rdd_code") else frozenset()
        attempt_codes = frozenset(_attempt_loop_codes(cf))

        def traced_code(local_vars: dict[str, Any]) -> tuple[Any, int] | None:
            tx = local_vars.get("self")
            code = getattr(tx, "f_code", None)
            return (code, 0) if code is not None else None

        def prop_key(local_vars: dict[str, Any]) -> FunctionKey | None:
            got = property_key(local_vars.get("self"), str(local_vars.get("name")), local_vars.get("type_attr"))
            return got[0] if got is not None else None

        root = getattr(self, "_compile_code", None)
        self.markers = Markers(
            frozenset({run_code}),
            prop_codes,
            traced_code,
            prop_key,
            attempt_codes,
            frozenset({root}) if root is not None else frozenset(),
        )

    def _hook_dynamo_profiler(self) -> None:
        config = _private("torch._dynamo.config")
        dp = _private("torch._dynamo.dynamo_profiler")

        if config.dynamo_profiler:
            self.warn("TORCH_COMPILE_DYNAMO_PROFILER is set: leaving torch's profiler output as it is")
            return
        recorder = self

        def dump_stats(state: Any, output_file: Any = None) -> None:
            timings = list(getattr(state, "timings", []))
            state.timings.clear()
            if timings:
                recorder._emit_inline(timings)

        dp.DynamoProfilerState.dump_stats = dump_stats
        config.dynamo_profiler = True
        self.own_config.add(("dynamo", "dynamo_profiler"))

    def _emit_inline(self, timings: list[Any]) -> None:
        tid = threading.get_ident()
        agg: dict[tuple[int, ...], list[float]] = {}
        for t in timings:
            path = [self.table.key_id((str(n), str(f), int(ln), "traced")) for (n, f, ln) in t.call_stack]
            path.append(self.table.key_id((str(t.func_name), str(t.filename), int(t.firstlineno), "traced")))
            cur = agg.setdefault(tuple(path), [0, 0.0])
            cur[0] += 1
            cur[1] += t.tottime_ns / 1e9
        self.emit_functions()
        key = self._key_of(None, tid)
        self.emit({"t": "inline", "key": key, "items": [[list(p), int(v[0]), round(v[1], 9)] for p, v in agg.items()]})

    # -- end of run ---------------------------------------------------------------------------
    def flush_guards(self) -> None:
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


#: torch's DDP graph split (``optimize_ddp``): the module holding ``DDPOptimizer`` / ``SubmodCompiler``
DDP_MODULE = "torch._dynamo.backends.distributed"


def hook_ddp_buckets(recorder: Recorder) -> None:
    """Per-bucket compiles of a DDP model's graph. With ``torch._dynamo.config.optimize_ddp`` on,
    ``DDPOptimizer.compile_fn`` splits the frame's graph where DDP's gradient buckets end and
    ``SubmodCompiler.compile_submod`` runs the backend on each piece, inside the frame's one
    compile. Each of those compiles becomes a ``span`` record ``ddp_bucket submod_N`` in the
    frame's window (so a phase of the frame, as torch's phase events are), its end carrying the
    bucket's index, the number of buckets, and the bucket's parameter count and bytes. Inert
    outside a compile window; strings and numbers only, nothing of the graph is kept.

    The module loads with the backends' registry (``torch.compile(..., backend="name")``), often
    after the hooks: installed then, at the next phase event, like Inductor's provenance hooks
    (torch 2.4 has no phase events: not captured there unless it was imported first)."""

    def install() -> None:
        try:
            _install_ddp_buckets(recorder, sys.modules[DDP_MODULE])
        except Exception as e:  # a moved internal: the bucket compiles stay in the frame's backend compile
            recorder.warn(f"DDP bucket compiles not captured ({type(e).__name__}: {e}); "
                          "their time shows in the frame's backend compile")

    if DDP_MODULE in sys.modules:
        _install_ddp_buckets(recorder, sys.modules[DDP_MODULE])
    elif "phases" not in recorder.hooks:  # torch < 2.5: no phase event to install it at
        raise RuntimeError(f"{DDP_MODULE} is not imported yet, and this torch has no phase events to "
                           "install the hook at once it is")
    else:
        recorder._lazy.append((DDP_MODULE, "DDP bucket compiles", install))


def _install_ddp_buckets(recorder: Recorder, module: Any) -> None:
    submod_compiler = module.SubmodCompiler
    orig_compile = submod_compiler.compile_submod
    orig_buckets = module.pretty_print_buckets
    sizes = threading.local()  # this thread's latest split: [(parameters, bytes)] per bucket

    @functools.wraps(orig_buckets)
    def pretty_print_buckets(buckets: Any, *a: Any, **k: Any) -> Any:
        try:
            if recorder.current(threading.get_ident()) is not None:
                sizes.buckets = [(len(b.params), int(b.size)) for b in buckets]
        except Exception:
            pass
        return orig_buckets(buckets, *a, **k)

    @functools.wraps(orig_compile)
    def compile_submod(this: Any, input_mod: Any, *a: Any, **k: Any) -> Any:
        tid = threading.get_ident()
        win = recorder.current(tid)
        if win is None:
            return orig_compile(this, input_mod, *a, **k)
        name = "submod_?"
        args: dict[str, Any] = {}
        try:
            name = next((str(n) for n, m in this.module.named_children() if m is input_mod), name)
            known = getattr(sizes, "buckets", None) or []
            index = int(name[len("submod_"):]) if name[len("submod_"):].isdigit() else None
            if index is not None:
                args["bucket"] = index
                if index < len(known):
                    args.update(buckets=len(known), params=known[index][0], param_bytes=known[index][1])
        except Exception:
            pass
        span = f"{DDP_BUCKET_SPAN} {name}"
        recorder.emit({"t": "span", "name": span, "ph": "B", "tid": tid, "ts": recorder.rel(time.time_ns()),
                       "key": win.key})
        try:
            return orig_compile(this, input_mod, *a, **k)
        finally:
            recorder.emit({"t": "span", "name": span, "ph": "E", "tid": tid, "ts": recorder.rel(time.time_ns()),
                           "key": win.key, "args": args})

    module.pretty_print_buckets = pretty_print_buckets
    submod_compiler.compile_submod = compile_submod


def install_trace_export(directory: str) -> None:
    """Also write a TORCH_TRACE-compatible log (what tlparse reads) into ``directory``.

    TORCH_TRACE is read only when torch is imported, so attach torch's own file handler now.
    Note: any trace handler makes torch build every structured payload (a few % of compile)."""
    import os

    tli = _private("torch._logging._internal")

    os.makedirs(directory, exist_ok=True)
    handler = tli.LazyTraceHandler(directory)
    handler.setFormatter(tli.TorchLogsFormatter(trace=True))
    tli.trace_log.handlers.insert(0, handler)


def format_exception_lines(exc: BaseException) -> list[str]:
    return traceback.format_exception(type(exc), exc, exc.__traceback__)
