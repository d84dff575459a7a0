"""The capture of one profiled session, shared by ``dynaprof run`` and in-process profiling.

``Capture`` wires a journal, the torch hooks (``Recorder``), the stack sampler and the optional
cProfile together, and writes the records that are held in memory until the end (sampler totals,
guard sizes, unfinished compiles, device, cProfile files). ``dynaprof run``'s child process
(``dynaprof.capture.child``) uses one for the whole process. ``dynaprof.profile()`` uses one per
profiled block through ``InProcess``:

* the torch hooks patch torch functions, so they are installed once per process and then stay;
  outside a block they are inert. The compile entry (``convert_frame._compile``) is gated: with no
  block active it calls torch's own function directly, so no compile window is opened, nothing is
  sampled or measured, and the other hooks (which act only inside a window, or hand a small record
  to a no-op) cost next to nothing. Uninstalling is not safe: whatever wrapped the same torch
  functions after us would be unwrapped too.
* each block gets its own journal, function table, sampler and cProfile, and the shared
  ``Recorder`` is pointed at them while the block runs (``InProcess._attach``: ``reset_session``).
* a ``torch._dynamo`` import that happens after a block started is hooked when it finishes
  importing (``DynamoWatcher``), as in ``dynaprof run``.
* one block at a time per process: compiles on any thread belong to it; a second ``profile()``, or
  one inside ``dynaprof run``, is refused. After a fork the child's capture is switched off. What
  installing the hooks recorded (torch version, hooks, warnings) is written again into every
  block's journal, so each session stands alone.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from dynaprof.capture.journal import JournalWriter
from dynaprof.capture.sampler import Sampler
from dynaprof.capture.stacks import LEGACY_WALKER_ENV, FunctionTable, Markers, StackWalker, TracedStacks
from dynaprof.capture.torch_private import _private
from dynaprof.fmt import stored_s
from dynaprof.model.capture_options import PYSPY_RATE_HZ as PYSPY_RATE_HZ  # declared in the model layer
from dynaprof.model.capture_options import CaptureOptions as CaptureOptions
from dynaprof.model.capture_options import default_rate as default_rate
from dynaprof.model.environment import compile_env, redact_argv
from dynaprof.model.journal import JOURNAL_SCHEMA, JournalRecord, StackItem, Start
from dynaprof.model.journal import Sampler as SamplerRecord
from dynaprof.version import __version__

if TYPE_CHECKING:
    from dynaprof.capture.torch_hooks import Recorder



def make_walker(table: FunctionTable, markers: Markers, traced: TracedStacks) -> StackWalker:
    """The walker, or the legacy one when the test-only switch is set (here, not in
    ``capture.stacks``, which the legacy walker builds on)."""
    if os.environ.get(LEGACY_WALKER_ENV) == "1":
        from dynaprof.capture.legacy_walker import LegacyStackWalker

        return LegacyStackWalker(table, markers)  # type: ignore[return-value]
    return StackWalker(table, markers, traced)




class DynamoWatcher:
    """Calls ``on_import`` right after ``torch._dynamo`` finishes importing. A ``sys.meta_path``
    finder needs only ``find_spec``: not subclassing ``importlib.abc.MetaPathFinder`` keeps
    ``importlib.abc`` (and the ``tempfile``, ``shutil``, ``bz2`` it imports) out of the run's child
    until the script imports them."""

    def __init__(self, on_import: Callable[[], None]) -> None:
        self.on_import = on_import

    def find_spec(
        self, fullname: str, path: Any, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch._dynamo":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.util.find_spec(fullname)
        loader = spec.loader if spec is not None else None
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        orig_exec = loader.exec_module
        callback = self.on_import

        def exec_module(module: ModuleType) -> None:
            orig_exec(module)
            callback()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec

    def remove(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


class Capture:
    """Journal + hooks + sampler + cProfile of one profiled session."""

    def __init__(self, journal: JournalWriter, t0_ns: int, options: CaptureOptions) -> None:
        self.journal = journal
        self.t0_ns = t0_ns
        self.options = options
        self.table = FunctionTable()
        self.recorder: Recorder | None = None
        self.sampler: Sampler | None = None
        self.cprofile: Any = None

    def install(self) -> None:
        """Install the torch hooks for this capture alone (the ``dynaprof run`` child)."""
        from dynaprof.capture.torch_hooks import Recorder

        rec = Recorder(self.journal.write, self.t0_ns, self.table)
        rec.install(inline_profile=self.options.inline_profile)
        if self.options.fold_parametrizations:
            from dynaprof.capture.hooks.unparametrize import install_unparametrize

            rec.install_step("fold_parametrizations", functools.partial(install_unparametrize, rec))
        elif self.options.replay_graphs:
            from dynaprof.capture.hooks.replay_graphs import install_replay_graphs

            rec.install_step("replay_graphs", functools.partial(install_replay_graphs, rec))
        if self.options.torch_trace_dir:
            from dynaprof.capture.hooks.trace_export import install_trace_export

            try:
                install_trace_export(self.options.torch_trace_dir)
            except Exception as e:
                rec.warn(f"--torch-trace: cannot write a TORCH_TRACE log ({type(e).__name__}: {e})")
        self.attach(rec)

    def attach(self, rec: Recorder) -> None:
        """Sampler, cProfile and the window callbacks, on an installed recorder."""
        self.recorder = rec
        opts = self.options
        if opts.sampler == "builtin":
            self.sampler = Sampler(
                make_walker(self.table, rec.markers, rec.traced),
                opts.rate_hz,
                rec.current_key,
                self._emit_stacks,
                use_signal=opts.use_signal,
                context=rec.sample_context,
                floor_s=(opts.signal_floor_s or 0.0) if opts.adapt_rate else None,
            )
        if opts.cprofile_dir:
            from dynaprof.capture.cprofile import CompileProfiler

            self.cprofile = CompileProfiler(opts.cprofile_dir, rec.warn)
        rec.time_calls = opts.time_calls
        rec.aot_components = opts.aot_components
        rec.causes_sampled = self.sampler is not None
        rec.on_window_start = self._window_start
        rec.on_window_end = self._window_end

    def _window_start(self, tid: int) -> None:
        if self.sampler is not None:
            self.sampler.window_started(tid)
        if self.cprofile is not None and self.recorder is not None:
            w = self.recorder.current(tid)
            self.cprofile.start(w.key if w is not None else None)

    def _window_end(self, tid: int) -> None:
        if self.cprofile is not None:
            self.cprofile.stop()
        if self.sampler is not None:
            self.sampler.window_ended(tid)

    def _emit_stacks(self, items: list[StackItem]) -> None:
        new = self.table.take_new()
        if new:
            self.journal.write({"t": "fn", "items": new})
        self.journal.write({"t": "stacks", "items": items})

    def finish_records(self) -> None:
        """Write what is held in memory until the end: sampler totals, guard sizes, unfinished
        compiles, the device, the cProfile files. A late failure becomes a warning record."""
        rec = self.recorder
        try:
            if self.sampler is not None:
                self.sampler.stop()
                totals: SamplerRecord = {
                    "t": "sampler",
                    "source": "builtin",
                    "requested_hz": self.options.rate_hz,
                    "seconds": self.sampler.window_seconds,
                    "errors": self.sampler.errors,
                    "notes": self.sampler.notes,
                }
                if self.sampler.adapted_hz:
                    totals["adapted_hz"] = self.sampler.adapted_hz
                if self.sampler.signal_samples:
                    totals["own_s"] = self.sampler.own_s
                    totals["signal_samples"] = self.sampler.signal_samples
                    if self.options.signal_floor_s is not None:
                        totals["floor_s"] = self.options.signal_floor_s
                self.journal.write(totals)
            if rec is not None:
                rec.flush_guards()
                if "calls" in rec.hooks:
                    counts, seconds = rec.call_counts()
                    self.journal.write({"t": "calls", "counts": counts, "seconds": seconds} if seconds else
                                       {"t": "calls", "counts": counts})
                for w in rec.unfinished():
                    self.journal.write({"t": "unfinished", "key": w.key})
                self.journal.write({"t": "device", "device": device_name()})
                rec.emit_config()
            if self.cprofile is not None:
                self.cprofile.finish(self.journal.write)
        except Exception as e:  # never lose the end record over a late failure
            self.journal.write({"t": "warn", "msg": f"finishing capture: {type(e).__name__}: {e}"})

    def end(self, exit_status: int | None, reason: str) -> None:
        self.journal.write(
            {
                "t": "end",
                "exit_status": exit_status,
                "reason": reason,
                "ts": stored_s((time.time_ns() - self.t0_ns) / 1e9),
            }
        )
        self.journal.close()

    def forked(self) -> None:
        """In a forked child: record nothing and write nothing into the parent's run folder."""
        self.journal.disable()
        self.cprofile = None
        self.sampler = None
        if self.recorder is not None:
            self.recorder.on_window_start = _nothing
            self.recorder.on_window_end = _nothing


def _nothing(_tid: int) -> None:
    pass


def _discard(_record: JournalRecord) -> None:
    pass


def device_name() -> str | None:
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.cuda.is_initialized():  # never initialise CUDA ourselves
            return f"cuda: {torch.cuda.get_device_name(torch.cuda.current_device())}"
        return "cuda (available)" if torch.cuda.is_available() else "cpu"
    except Exception:
        return None


def int_env(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


# -- in-process profiling -------------------------------------------------------------------------


class CaptureBusy(RuntimeError):
    """A block is already being profiled in this process (or ``dynaprof run`` owns the hooks)."""


class InProcess:
    """The process-wide state of in-process profiling: one set of hooks, at most one active block."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.recorder: Recorder | None = None
        #: what installing the hooks recorded (torch version, hooks, warnings): every block's journal
        self.install_records: list[JournalRecord] = []
        self.active: Capture | None = None
        #: set by the ``dynaprof run`` child, which installs its own hooks for the whole process
        self.owner: str | None = None
        self._watcher: DynamoWatcher | None = None
        self._fork_hook = False

    def claim_for_run(self) -> None:
        self.owner = "dynaprof run"

    def begin(self, journal: JournalWriter, t0_ns: int, options: CaptureOptions, start: Start) -> Capture:
        with self.lock:
            if self.owner is not None:
                raise CaptureBusy(f"this process is already profiled by `{self.owner}`, which records every compile")
            if self.active is not None:
                raise CaptureBusy("a profile is already active in this process")
            if not self._fork_hook:
                os.register_at_fork(after_in_child=self._forked)
                self._fork_hook = True
            cap = Capture(journal, t0_ns, options)
            journal.write(start)
            self.active = cap
            if self.recorder is not None:
                self._attach(cap)
            elif "torch._dynamo" in sys.modules:
                self._install()
            elif self._watcher is None:
                self._watcher = DynamoWatcher(self._on_dynamo_import)
                sys.meta_path.insert(0, self._watcher)
            return cap

    def end(self, cap: Capture, exit_status: int | None, reason: str) -> None:
        with self.lock:
            if self.active is not cap:
                return
            self.active = None  # the gate closes: no new compile window from here on
            if self._watcher is not None:
                self._watcher.remove()
                self._watcher = None
            cap.finish_records()
            rec = self.recorder
            if rec is not None:
                rec.emit = _discard
                rec.on_window_start = _nothing
                rec.on_window_end = _nothing
            cap.end(exit_status, reason)

    # -- hooks ------------------------------------------------------------------------------------
    def _on_dynamo_import(self) -> None:
        with self.lock:
            self._watcher = None
            if self.active is not None and self.recorder is None:
                self._install()

    def _install(self) -> None:
        """Install the hooks once for the process (``self.active`` is set), then attach the block."""
        from dynaprof.capture.torch_hooks import Recorder

        cap = self.active
        assert cap is not None
        records: list[JournalRecord] = []
        rec = Recorder(records.append, cap.t0_ns, cap.table)
        try:
            rec.install(inline_profile=False)
        except Exception as e:  # e.g. torch itself fails to import: profile nothing, break nothing
            records.append({"t": "warn", "msg": f"torch hooks not installed ({type(e).__name__}: {e})"})
        self._gate(rec)
        self.recorder = rec
        self.install_records = records
        self._attach(cap)

    def _gate(self, rec: Recorder) -> None:
        """Outside a block, Dynamo's compile entry calls torch's own function, not the hook, and
        no backward / compiled-autograd window opens from a phase event."""
        rec.gate = lambda: self.active is not None
        if "compile_windows" not in rec.hooks:
            return
        try:
            cf = _private("torch._dynamo.convert_frame")
            hooked = cf._compile
            orig = hooked.__wrapped__
        except Exception:
            return
        state = self

        @functools.wraps(orig)
        def _compile(*args: Any, **kwargs: Any) -> Any:
            if state.active is None:
                return orig(*args, **kwargs)
            return hooked(*args, **kwargs)

        cf._compile = _compile

    def _attach(self, cap: Capture) -> None:
        """Point the shared recorder at this block's journal and tables, and replay what
        installing recorded, so each block's session is complete on its own."""
        rec = self.recorder
        assert rec is not None
        rec.reset_session(cap.journal.write, cap.t0_ns, cap.table)
        for record in self.install_records:
            cap.journal.write(record)
        cap.attach(rec)

    def _forked(self) -> None:
        cap, self.active = self.active, None
        if cap is not None:
            cap.forked()
        self.lock = threading.RLock()  # a lock held by another thread at fork stays held in the child


IN_PROCESS = InProcess()


def in_process_start_record(t0_ns: int, target: str) -> Start:
    """The journal's ``start`` record for a block profiled in this process."""
    return {
        "t": "start",
        "schema": JOURNAL_SCHEMA,
        "pid": os.getpid(),
        "argv": redact_argv(sys.argv),
        "cwd": os.getcwd(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": platform.node(),
        "epoch_ns": t0_ns,
        "dynaprof": __version__,
        "target": target,
        "rank": int_env("RANK"),
        "world_size": int_env("WORLD_SIZE"),
        "tid": threading.get_ident(),
        "env": compile_env(os.environ),
    }
