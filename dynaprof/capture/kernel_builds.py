"""Whose kernel is being compiled: Inductor's kernel builds and the waits on them, wherever they run.

Inductor's output module defines each kernel as ``name = async_compile.<backend>(...)`` and ends
with ``async_compile.wait(globals())``. The build happens in one of three places:

* in process, inside that call: one compile thread, the pool not ready yet, a Triton kernel
  compiled in the parent, and always the first C++ kernel's toolchain setup (the vector-ISA probe,
  the precompiled header), which ``CppCodeCache.load_async`` does before it submits the build;
* in a worker (a thread of ``AsyncCompile.pool()`` for C++, a subprocess for Triton), while the
  compiling thread waits in ``AsyncCompile._wait_futures``;
* nowhere (a binary already on disk), when the call only loads it.

The hooks here push a cause of the kernel's own (``KERNEL_CAUSE``, one per kernel and compile) for
the whole call, so in-process work is sampled under it, and write a ``kernel`` record with its
origin nodes by cause (``Window.kernel_parts``, recorded when Inductor defined it): the assembler
gives the kernel's samples to their owner, or splits a kernel that fuses a parametrization's nodes
into user code (``ingest.kernel_split``). They time each kernel's build where it runs: the call
itself when it returns the kernel, the worker task when it returns a future (C++: the task handed
to ``AsyncCompile.submit``; Triton: the worker's own ``elapsed_us``). A wait is sampled under a
cause of its own (``KERNEL_WAIT_CAUSE``); when it ends, a ``kernel_wait`` record gives the measured
build seconds of each kernel it waited for, and the assembler splits the wait's samples between
those kernels in that proportion. A wait on kernels of which none was measured is recorded as such
and never given to the union of their causes.

Each builder call of a C++ (or Halide) kernel is also that kernel's code cache lookup: hit where
nothing was built, miss where a worker or the call itself built it, with torch's key
(``kernel_cache``, whose probe the builder hook opens for the call).

Every hook runs on the thread that called it (a compiling thread, or a worker thread for the timed
task), never in a signal handler; reads of the calling frame are of Inductor's generated module.
"""

from __future__ import annotations

import functools
import linecache
import re
import sys
import threading
import time
from typing import Any, Protocol

from dynaprof.capture import kernel_cache, node_causes
from dynaprof.capture.stacks import FunctionKey, TracedStacks
from dynaprof.capture.torch_private import torch_version
from dynaprof.fmt import stored_s
from dynaprof.model.journal import KERNEL_CAUSE, KERNEL_WAIT_CAUSE, JournalRecord


class Window(Protocol):
    """What these hooks read and write of a compile window (``recorder.Window``)."""

    key: str
    kernel_pending: set[str]
    kernel_worker_s: dict[str, float]
    kernel_parts: dict[str, node_causes.KernelParts]
    kernel_ids: dict[str, int]


class Recorder(Protocol):
    """What these hooks use of the recorder (``recorder.CompileRecorder``)."""

    causes: TracedStacks
    #: journals a cache lookup (``capture.cache_keys``); None where that hook is not installed
    cache_lookup: Any

    def warn(self, message: str) -> None: ...

    def current(self, tid: int) -> Window | None: ...

    def _cause_id(self, key: FunctionKey) -> int: ...

    def emit(self, record: JournalRecord) -> None: ...

    def emit_functions(self) -> None: ...

#: the AsyncCompile methods that build one kernel from source (``triton`` takes the name first)
BUILDERS = ("cpp", "cpp_pybinding", "triton", "halide")
_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*async_compile\.\w+\(")


def kernel_name(method: str, args: tuple[Any, ...], kwargs: dict[str, Any], caller: Any) -> str | None:
    """The kernel a builder call defines: Triton's first argument, else the name the generated
    module's line assigns the call's result to."""
    if method == "triton":
        name = args[0] if args else kwargs.get("kernel_name")
        return name if isinstance(name, str) else None
    if caller is None:
        return None
    line = linecache.getline(caller.f_code.co_filename, caller.f_lineno)
    m = _ASSIGNED.match(line)
    return m.group(1) if m else None


def _is_future(value: Any) -> bool:
    return callable(getattr(value, "result", None))


class KernelBuilds:
    """The hooks' state: which kernel the current thread's builder call is for (read by the
    ``submit`` hook on the same thread), and a count of waits (their cause keys are unique)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.local = threading.local()
        self.waits = 0
        #: the kernel code cache lookups' hooks (``capture.kernel_cache``); None: not recorded
        self.lookups: kernel_cache.KernelLookups | None = None

    def builder(self, method: str, orig: Any) -> Any:
        recorder, local = self.recorder, self.local

        @functools.wraps(orig)
        def build(this: Any, *a: Any, **k: Any) -> Any:
            tid = threading.get_ident()
            win = recorder.current(tid)
            if win is None:
                return orig(this, *a, **k)
            name = kernel_name(method, a, k, sys._getframe(1))
            cid = self.kernel_id(win, name) if name is not None else None
            if cid is None:  # a kernel this compile did not define (a module loaded from a cache)
                cid = recorder._cause_id(node_causes.UNKNOWN)
            before = getattr(local, "kernel", None)
            local.kernel = (win, name) if name is not None else None
            local.submitted = False
            lookups = self.lookups if name is not None else None
            outer = lookups.begin() if lookups is not None else None
            depth = recorder.causes.enter(tid, cid)
            try:
                out = orig(this, *a, **k)
            finally:
                recorder.causes.exit(tid, depth)
                local.kernel = before
                probe = lookups.end(outer) if lookups is not None else None
            if name is not None and _is_future(out):
                win.kernel_pending.add(name)  # built by a worker: its task is timed there
                if method != "triton" and not local.submitted:  # nothing to build: the binary was there
                    win.kernel_worker_s.setdefault(name, 0.0)
            if lookups is not None and probe is not None and name is not None:
                try:
                    lookups.record(win.key, method, name, out, local.submitted, probe)
                except Exception:  # a profiler's bookkeeping never fails the compile
                    pass
            return out

        return build

    def kernel_id(self, win: Window, name: str) -> int | None:
        """The cause id a kernel's build is sampled under (one per kernel and compile), its
        ``kernel`` record written the first time; None for a kernel this compile did not define."""
        kid = win.kernel_ids.get(name)
        if kid is not None:
            return kid
        parts = win.kernel_parts.get(name)
        if parts is None:
            return None
        recorder = self.recorder
        kid = win.kernel_ids[name] = recorder._cause_id((name, win.key, len(win.kernel_ids), KERNEL_CAUSE))
        recorder.emit_functions()
        recorder.emit({
            "t": "kernel", "key": win.key, "cause": kid, "name": name, "nodes": parts.nodes,
            "param_nodes": parts.param_nodes, "param": parts.param, "rest": parts.rest, "users": list(parts.users),
        })  # fmt: skip
        return kid

    def submit(self, orig: Any) -> Any:
        local = self.local

        @functools.wraps(orig)
        def submit(cls: Any, task: Any, *a: Any, **k: Any) -> Any:
            current = getattr(local, "kernel", None)
            if current is None:
                return orig(cls, task, *a, **k)
            win, name = current
            local.submitted = True

            def timed() -> Any:
                t0 = time.perf_counter()
                try:
                    return task()
                finally:
                    win.kernel_worker_s[name] = win.kernel_worker_s.get(name, 0.0) + time.perf_counter() - t0

            return orig(cls, timed, *a, **k)

        return submit

    def triton_metric(self, orig: Any) -> Any:
        """``_emit_triton_kernel_compile_metric(kernel, kernel_name, elapsed_us)``: the build's time
        as the Triton worker (or the parent) measured it."""
        recorder = self.recorder

        @functools.wraps(orig)
        def emit(kernel: Any, name: Any, elapsed_us: Any, *a: Any, **k: Any) -> Any:
            win = recorder.current(threading.get_ident())
            if win is not None and isinstance(name, str) and isinstance(elapsed_us, (int, float)):
                win.kernel_worker_s[name] = elapsed_us / 1e6
            return orig(kernel, name, elapsed_us, *a, **k)

        return emit

    def wait(self, orig: Any) -> Any:
        recorder = self.recorder

        @functools.wraps(orig)
        def _wait_futures(this: Any, scope: Any, *a: Any, **k: Any) -> Any:
            tid = threading.get_ident()
            win = recorder.current(tid)
            if win is None or not isinstance(scope, dict):
                return orig(this, scope, *a, **k)
            names = [n for n in list(scope) if n in win.kernel_pending]
            self.waits += 1
            fid = recorder._cause_id((f"kernel wait {self.waits}", "", 0, KERNEL_WAIT_CAUSE))
            depth = recorder.causes.enter(tid, fid)
            t0 = time.perf_counter()
            try:
                return orig(this, scope, *a, **k)
            finally:
                recorder.causes.exit(tid, depth)
                self._record_wait(win, fid, names, time.perf_counter() - t0)

        return _wait_futures

    def _record_wait(self, win: Window, fid: int, names: list[str], seconds: float) -> None:
        recorder = self.recorder
        shares: dict[int, float] = {}
        unmeasured = 0
        for name in names:
            built = win.kernel_worker_s.get(name)
            if built is None:
                unmeasured += 1
                continue
            cid = win.kernel_ids.get(name)
            cid = cid if cid is not None else recorder._cause_id(node_causes.UNKNOWN)
            shares[cid] = shares.get(cid, 0.0) + built
        win.kernel_pending.difference_update(names)
        recorder.emit_functions()
        recorder.emit({
            "t": "kernel_wait", "key": win.key, "cause": fid, "seconds": stored_s(seconds),
            "unmeasured": unmeasured,
            "shares": [[c, stored_s(s)] for c, s in sorted(shares.items())],
        })  # fmt: skip


def install(recorder: Recorder) -> None:
    """Wrap ``AsyncCompile``'s builders, ``submit`` and ``_wait_futures`` (and Triton's compile
    metric, where it exists). Raises where torch's names moved: the caller warns once."""
    module: Any = sys.modules["torch._inductor.async_compile"]
    ac = module.AsyncCompile
    hooks = KernelBuilds(recorder)
    emit = recorder.cache_lookup
    if emit is not None:
        try:
            hooks.lookups = kernel_cache.install(emit, recorder.warn)
        except Exception as e:  # the builds are still hooked: only their cache outcomes are lost
            recorder.warn(f"torch {torch_version()}: kernel code cache lookups not captured ({type(e).__name__}: {e})")
    for method in BUILDERS:
        if method in ac.__dict__:
            setattr(ac, method, hooks.builder(method, ac.__dict__[method]))
    submit = ac.__dict__["submit"]
    ac.submit = classmethod(hooks.submit(submit.__func__ if isinstance(submit, classmethod) else submit))
    ac._wait_futures = hooks.wait(ac._wait_futures)
    if hasattr(module, "_emit_triton_kernel_compile_metric"):
        module._emit_triton_kernel_compile_metric = hooks.triton_metric(module._emit_triton_kernel_compile_metric)
