"""Cache lookups seen from capture: every one a compile makes, with its key's components (``cache_lookup``).

What torch already computes, read where it passes:

* Inductor's FX graph cache and AOTAutograd's cache log each lookup as a chromium instant event
  (``fx_graph_cache_hit`` / ``_miss`` / ``_bypass``, ``autograd_cache_*``) whose metadata is the
  lookup's cache info: ``cache_state``, ``key``, ``components`` (``FxGraphCachePickler.debug_lines``),
  ``time_saved_ns`` on a hit, ``cache_bypass_reason``. Those events reach
  ``ChromiumEventLogger.log_instant_event``, not ``record_chromium_event_internal`` (torch 2.13),
  so that method is wrapped.
* AOTAutograd computes its key's components only when its logger is at DEBUG
  (``_get_debug_lines_for_cache_key``); the wrapper computes them itself from the same pickler and
  details (``pickler.debug_lines``, a few ms per compile), keeps them for the lookup's event, and
  hands torch what torch computed: the user's logging and torch's own records are unchanged.
  Only with ``dynaprof run --aot-components`` (``Recorder.aot_components``): re-pickling the graph
  costs an Inductor compile 1-3% (``docs/performance.md``, "Counted in instructions").
* Torch 2.4 has no instant events: its FX graph cache keys come from the structured trace and
  their outcomes from Inductor's counters (``TraceLookups``).
* Dynamo's profile-guided ``code_state`` (``torch._dynamo.pgo.get_local_code_state``, read once per
  process where a job id gives it a key): hit or miss.

Each distinct component (and graph node) is journaled once as a ``key_part``; lookups list ids.
Inert outside a compile window; guarded like every other hook (a moved name is a warning).
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from dynaprof.capture.torch_private import _private, torch_version
from dynaprof.model.cache import marker
from dynaprof.model.cache_keys import KeyComponent, ParsedLookup, lookup_from_info, lookup_record
from dynaprof.model.journal import JournalRecord, SpanEvent


class _Window(Protocol):
    key: str


class Recorder(Protocol):
    """What these hooks use of the recorder (``torch_hooks.Recorder``)."""

    emit: Callable[[JournalRecord], None]

    def current(self, tid: int) -> _Window | None: ...

    #: (module, what, install): installed at the first timed span after the module is imported
    _lazy: list[tuple[str, str, Callable[[], None]]]

    def warn(self, message: str) -> None: ...

    def warn_if_imported(self, module: str, message: str) -> None: ...

    def _key_of(self, compile_id: str | None, tid: int) -> str | None: ...

    def rel(self, epoch_ns: float) -> float: ...

    #: compute AOTAutograd's key components (``--aot-components``)
    aot_components: bool
    #: where the kernel code cache lookups are journaled (``capture.kernel_cache``)
    cache_lookup: Callable[[ParsedLookup, str | None], None] | None

UTILS = "torch._dynamo.utils"
AOT_CACHE = "torch._functorch._aot_autograd.autograd_cache"
PGO = "torch._dynamo.pgo"
COMPILE_FX = "torch._inductor.compile_fx"
#: AOTAutograd debug lines kept for their lookup's event, per thread (the event follows at once)
_KEPT = 4
#: values whose pickled hash depends on the value alone (``compute_aot_lines``), and how many kept
_PLAIN = frozenset({bool, int, str, type(None)})  # not float: -0.0 == 0.0, but they pickle apart
_MEMO_MAX = 50_000


class _Parts:
    """The ``key_part`` ids of one journal (in-process profiling gives each block its own)."""

    def __init__(self, emit: Any) -> None:
        self.emit = emit
        self.ids: dict[KeyComponent, int] = {}
        self.new: list[list[Any]] = []  # written as one record before the lookup that uses them

    def id_of(self, c: KeyComponent) -> int:
        i = self.ids.get(c)
        if i is None:
            i = self.ids[c] = len(self.ids)
            self.new.append([i, c.name, c.hash, c.value])
        return i

    def flush(self) -> None:
        if self.new:
            self.emit({"t": "key_part", "items": self.new})
            self.new = []


class CacheKeyHooks:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.parts = _Parts(recorder.emit)
        self.aot_lines = threading.local()  # .kept: list[(key, debug lines)]
        self.hash_memo: dict[tuple[Any, ...], Any] = {}  # see compute_aot_lines
        #: why AOTAutograd's components could not be hooked (torch 2.6 computes them itself:
        #: said only if a lookup then comes without them)
        self.aot_unhooked: str | None = None
        #: also journal each lookup's cache marker (``marker``): set where torch's metrics lack them
        self.markers = False

    def _table(self) -> _Parts:
        if self.parts.emit != self.recorder.emit:  # a new journal: its ids start again
            self.parts = _Parts(self.recorder.emit)
        return self.parts

    def emit(self, lk: ParsedLookup, key: str | None = None) -> None:
        """Journal one lookup, for the compile open on this thread (or the compile ``key``)."""
        if key is None:
            win = self.recorder.current(threading.get_ident())
            if win is None:
                return
            key = win.key
        table = self._table()
        rec = lookup_record(key, lk, table.id_of)
        table.flush()  # one journal line for a first lookup's ~600 new components, not one each
        self.recorder.emit(rec)

    def on_instant(self, name: str, metadata: Any) -> None:
        m = marker(name)
        if m is None or not isinstance(metadata, dict) or self.recorder.current(threading.get_ident()) is None:
            return
        info = metadata
        if m[0] == "aot_autograd" and not metadata.get("components"):
            lines = self._take_aot_lines(metadata.get("key"))
            if lines:
                info = {**metadata, "components": lines}
            elif self.aot_unhooked and metadata.get("key"):
                self.recorder.warn(f"torch {torch_version()}: AOTAutograd cache key components not captured "
                                   f"({self.aot_unhooked}): its misses are not explained")  # fmt: skip
                self.aot_unhooked = None  # said once
        lk = lookup_from_info(m[0], info, m[1])
        if lk is not None:
            self.emit(lk)
            if self.markers:
                win = self.recorder.current(threading.get_ident())
                if win is not None:
                    self.marker(name, win.key, metadata.get("time_saved_ns"))

    def marker(self, name: str, key: str, saved_ns: Any = None) -> None:
        """The ``span`` record of a cache marker (``CompiledFrame.cache`` counts them), for a torch
        whose CompilationMetrics do not count local lookups (2.4-2.6; 2.13 does, and its counts are kept)."""
        rec: SpanEvent = {"t": "span", "name": name, "ph": "i", "tid": threading.get_ident(),
                          "ts": self.recorder.rel(time.time_ns()), "key": key}  # fmt: skip
        if isinstance(saved_ns, (int, float)) and not isinstance(saved_ns, bool):
            rec["args"] = {"time_saved_ns": saved_ns}
        self.recorder.emit(rec)

    def compute_aot_lines(self, pickler: Any, details: Any) -> list[str]:
        """AOTAutograd's key components, as torch computes them at DEBUG logging: its pickler
        hashes each attribute of the key's details again, ~600 of them Inductor config values.
        The hashes of plain values are kept for the process's later compiles (the same values,
        the same pickler class: the same hash), so only the first compile pays for them all."""
        memo = self.hash_memo
        own = pickler.get_hash  # torch is done with this pickler: shadowing its method is safe

        def get_hash(obj: Any) -> Any:
            t = type(obj)
            if t in _PLAIN:
                k: tuple[Any, ...] = (type(pickler), t, obj)
            elif (t is list or t is tuple) and all(type(x) in _PLAIN for x in obj):
                k = (type(pickler), t, *((type(x), x) for x in obj))  # (True,) and (1,) pickle apart
            else:
                return own(obj)
            h = memo.get(k)
            if h is None:
                h = own(obj)
                if len(memo) < _MEMO_MAX:
                    memo[k] = h
            return h

        pickler.get_hash = get_hash
        try:
            return list(pickler.debug_lines(details))
        finally:
            del pickler.get_hash

    def keep_aot_lines(self, key: Any, lines: list[str]) -> None:
        kept: list[tuple[Any, list[str]]] = getattr(self.aot_lines, "kept", [])
        kept.append((key, lines))
        self.aot_lines.kept = kept[-_KEPT:]

    def _take_aot_lines(self, key: Any) -> list[str] | None:
        kept: list[tuple[Any, list[str]]] = getattr(self.aot_lines, "kept", [])
        for i in range(len(kept) - 1, -1, -1):
            if kept[i][0] == key:
                return kept.pop(i)[1]
        return None


def install_cache_hooks(recorder: Recorder) -> None:
    """Install the cache-lookup hooks; raises if neither the instant events nor (torch 2.4) the
    structured trace can be hooked."""
    hooks = CacheKeyHooks(recorder)
    recorder.cache_lookup = hooks.emit  # the kernel code caches' lookups (``capture.kernel_cache``)
    utils = _private(UTILS)
    logger_cls: Any = getattr(utils, "ChromiumEventLogger", None)
    if logger_cls is None or not hasattr(logger_cls, "log_instant_event"):
        _install_from_trace(recorder, hooks, utils)
        return
    orig = logger_cls.log_instant_event
    fields = getattr(getattr(utils, "CompilationMetrics", None), "__dataclass_fields__", {})
    hooks.markers = "inductor_fx_local_cache_hit_count" not in fields  # torch 2.5-2.6 counts remote ones only

    @functools.wraps(orig)
    def log_instant_event(self: Any, event_name: Any, *a: Any, **k: Any) -> Any:
        try:
            metadata = a[1] if len(a) > 1 else k.get("metadata")
            hooks.on_instant(str(event_name), metadata)
        except Exception:
            pass
        return orig(self, event_name, *a, **k)

    logger_cls.log_instant_event = log_instant_event
    # these modules load during the first compile (importing them here, in the middle of
    # torch._dynamo's import, would be circular): installed once loaded, like Inductor's hooks
    for module, what, hook in (
        (AOT_CACHE, "AOTAutograd cache key components", functools.partial(_hook_aot_debug_lines, recorder, hooks)),
        (PGO, "profile-guided code state lookups", functools.partial(_hook_pgo, hooks)),
    ):
        _when_loaded(recorder, module, what, hook)


def _when_loaded(recorder: Recorder, module: str, what: str, hook: Callable[[Any], None]) -> None:
    def install() -> None:
        try:
            hook(sys.modules[module])
        except Exception as e:  # torch < 2.6 has neither: those lookups keep no components / are not seen
            recorder.warn(f"torch {torch_version()}: {what} not captured ({type(e).__name__}: {e})")

    if module in sys.modules:
        install()
    else:
        recorder._lazy.append((module, what, install))


def _hook_aot_debug_lines(recorder: Recorder, hooks: CacheKeyHooks, module: Any) -> None:
    orig = getattr(module, "_get_debug_lines_for_cache_key", None)
    if orig is None:  # torch 2.6 computes the lines whatever the logging: its events carry them
        hooks.aot_unhooked = f"{module.__name__} has no _get_debug_lines_for_cache_key"
        return

    @functools.wraps(orig)
    def debug_lines(pickler: Any, details: Any, key: Any, *a: Any, **k: Any) -> Any:
        out = orig(pickler, details, key, *a, **k)
        if recorder.current(threading.get_ident()) is not None:
            try:  # what torch computes at DEBUG, computed here without touching its logging
                lines = out if out else hooks.compute_aot_lines(pickler, details) if recorder.aot_components else None
                if lines:
                    hooks.keep_aot_lines(key, lines)
            except Exception:
                pass
        return out

    module._get_debug_lines_for_cache_key = debug_lines


def _hook_pgo(hooks: CacheKeyHooks, module: Any) -> None:
    orig = module.get_local_code_state

    @functools.wraps(orig)
    def get_local_code_state(cache_key: Any, *a: Any, **k: Any) -> Any:
        out = orig(cache_key, *a, **k)
        try:
            hooks.emit(ParsedLookup("pgo", "hit" if out is not None else "miss", key=str(cache_key)))
        except Exception:
            pass
        return out

    module.get_local_code_state = get_local_code_state


#: torch 2.4's Inductor counters of FX graph cache lookups (``torch._dynamo.utils.counters``)
_COUNTED = {"hit": "fxgraph_cache_hit", "miss": "fxgraph_cache_miss", "bypass": "fxgraph_cache_bypass"}


class TraceLookups:
    """Torch without chromium instant events (2.4): the FX graph cache lookups from what passes
    ``torch._logging.trace_structured`` (called whether or not TORCH_TRACE is on) and Inductor's
    counters. Torch 2.4 logs each lookup's key and components as an ``fx_graph_cache_hash``
    artifact before it looks the key up, and counts the outcome in
    ``counters["inductor"]["fxgraph_cache_hit" / "_miss" / "_bypass"]``: the outcome is read from
    the counters at the compile's next key or at its ``compilation_metrics`` (its end). A bypass
    (raised before any key is computed) has neither key nor reason: it is the bypass counter's
    growth during one compile (from its ``dynamo_start``). No time saved: 2.4 does not say it.
    Artifacts that already carry their outcome (``fx_graph_cache_hit``, ... with ``cache_state``)
    are read as they are."""

    def __init__(self, recorder: Recorder, hooks: CacheKeyHooks, counters: Any) -> None:
        self.recorder, self.hooks, self.counters = recorder, hooks, counters
        self.local = threading.local()  # .pending: (frame key, info, counts) | None; .bypasses: int
        self.said_off = False

    def say_if_off(self) -> None:
        """Once, after an Inductor compile with the FX graph cache off (2.4's default)."""
        config = sys.modules.get("torch._inductor.config")
        if getattr(config, "fx_graph_cache", None) is False and not getattr(config, "fx_graph_remote_cache", None):
            self.said_off = True
            self.recorder.warn(
                f"torch {torch_version()}: Inductor's FX graph cache is off (this torch's default; "
                "TORCHINDUCTOR_FX_GRAPH_CACHE=1 or torch._inductor.config.fx_graph_cache = True turns it on): "
                "a warm start is served by the kernel code caches only, which log no lookups"
            )

    def count(self, outcome: str) -> int:
        inductor = self.counters.get("inductor")  # .get: never add a key to torch's counters
        n = inductor.get(_COUNTED[outcome], 0) if inductor is not None else 0
        return int(n) if isinstance(n, int) else 0

    def on_trace(self, name: str, metadata_fn: Any, payload_fn: Any) -> None:
        tid = threading.get_ident()
        if name == "dynamo_start":
            self.local.bypasses = self.count("bypass")
        elif name == "compilation_metrics":
            self.resolve()
            if not self.said_off and COMPILE_FX in sys.modules:
                self.say_if_off()
            start = getattr(self.local, "bypasses", None)
            if start is not None and (n := self.count("bypass") - start) > 0:
                cid = (metadata_fn() or {}).get("compile_id") if callable(metadata_fn) else None
                key = self.recorder._key_of(None if cid is None else str(cid), tid)
                for _ in range(min(n, 100)):
                    self.emit(ParsedLookup("fx_graph", "bypass"), key)
            self.local.bypasses = None
        elif name == "artifact" and callable(metadata_fn) and callable(payload_fn):
            win = self.recorder.current(tid)
            if win is None:
                return
            art = metadata_fn()
            art_name = art.get("name") if isinstance(art, dict) else None
            if not isinstance(art_name, str) or not art_name.startswith("fx_graph_cache_"):
                return
            info = json.loads(payload_fn())
            if not isinstance(info, dict):
                return
            m = marker(art_name)
            if m is not None:  # an artifact that says its outcome
                lk = lookup_from_info(m[0], info, m[1])
                if lk is not None:
                    self.emit(lk, win.key)
            elif art_name == "fx_graph_cache_hash":
                self.resolve()
                self.local.pending = (win.key, info, {o: self.count(o) for o in ("hit", "miss")})

    def resolve(self) -> None:
        """The pending key's outcome: the counter that grew since it was logged (else none is said)."""
        pending = getattr(self.local, "pending", None)
        self.local.pending = None
        if pending is None:
            return
        key, info, before = pending
        grew = [o for o in ("hit", "miss") if self.count(o) > before[o]]
        if len(grew) == 1:
            lk = lookup_from_info("fx_graph", info, grew[0])
            if lk is not None:
                self.emit(lk, key)

    def emit(self, lk: ParsedLookup, key: str | None) -> None:
        """The lookup, and the cache marker later torch gives as an instant event (the compile's
        ``CompiledFrame.cache`` counts)."""
        if key is None:
            return
        self.hooks.emit(lk, key)
        self.hooks.marker(f"fx_graph_cache_{lk.outcome}", key)


def _install_from_trace(recorder: Recorder, hooks: CacheKeyHooks, utils: Any) -> None:
    logging_mod = _private("torch._logging")
    orig = logging_mod.trace_structured
    lookups = TraceLookups(recorder, hooks, utils.counters)

    @functools.wraps(orig)
    def trace_structured(name: Any, *a: Any, **k: Any) -> Any:
        try:
            lookups.on_trace(str(name), a[0] if a else k.get("metadata_fn"), k.get("payload_fn"))
        except Exception:
            pass
        return orig(name, *a, **k)

    logging_mod.trace_structured = trace_structured
    recorder.warn(
        f"torch {torch_version()}: cache lookups are the FX graph cache's only, read from its logged keys and "
        "Inductor's counters (no bypass reason, no time saved); AOTAutograd cache and profile-guided code state "
        "lookups are not seen on this torch (2.4 has neither cache)"
    )
