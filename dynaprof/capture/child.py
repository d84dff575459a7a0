"""The profiled process: runs the user's script as ``python script.py`` would, with hooks.

Started by ``dynaprof.capture.launcher`` as ``python -c <boot> ...`` with its configuration in
the ``DYNAPROF_CHILD`` environment variable. It writes the journal; the parent assembles it.
Torch hooks are installed the moment the script first imports ``torch._dynamo`` (so a script
that never compiles pays nothing, and torch is never imported earlier than the script does).
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import platform
import runpy
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from dynaprof import __version__
from dynaprof.capture.journal import JournalWriter
from dynaprof.capture.sampler import Sampler
from dynaprof.capture.stacks import FunctionTable, make_walker

CONFIG_ENV = "DYNAPROF_CHILD"


@dataclass
class ChildConfig:
    journal: str
    kind: str  # script | module
    target: str
    args: list[str]
    sampler: str = "builtin"  # builtin | py-spy | none
    rate_hz: float = 1000.0
    inline_profile: bool = False
    cprofile_dir: str | None = None
    torch_trace_dir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class _DynamoWatcher(importlib.abc.MetaPathFinder):
    """Calls ``on_import`` right after ``torch._dynamo`` finishes importing."""

    def __init__(self, on_import: Any) -> None:
        self.on_import = on_import

    def find_spec(
        self, fullname: str, path: Any, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch._dynamo":
            return None
        sys.meta_path.remove(self)
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


class Child:
    def __init__(self, cfg: ChildConfig) -> None:
        self.cfg = cfg
        self.t0_ns = time.time_ns()
        self.journal = JournalWriter(Path(cfg.journal))
        self.table = FunctionTable()
        self.recorder: Any = None
        self.sampler: Sampler | None = None
        self.cprofile: Any = None
        self.exit_status = 0
        self.end_reason = "exited"
        self._finished = False

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self.journal.write(
            {
                "t": "start",
                "pid": os.getpid(),
                "argv": [self._argv0(), *self.cfg.args],
                "cwd": os.getcwd(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "hostname": socket.gethostname(),
                "epoch_ns": self.t0_ns,
                "dynaprof": __version__,
                "target": self.cfg.target,
                "kind": self.cfg.kind,
                "rank": _int_env("RANK"),
                "world_size": _int_env("WORLD_SIZE"),
                "tid": threading.main_thread().ident,
            }
        )
        os.register_at_fork(after_in_child=self._forked)
        atexit.register(self.finish)
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_sigterm)
        if "torch._dynamo" in sys.modules:
            self.install()
        else:
            sys.meta_path.insert(0, _DynamoWatcher(self.install))

    def install(self) -> None:
        from dynaprof.capture.torch_hooks import Recorder

        rec = Recorder(self.journal.write, self.t0_ns, self.table)
        self.recorder = rec
        rec.install(inline_profile=self.cfg.inline_profile)
        if self.cfg.torch_trace_dir:
            from dynaprof.capture.torch_hooks import install_trace_export

            try:
                install_trace_export(self.cfg.torch_trace_dir)
            except Exception as e:
                rec.warn(f"--torch-trace: cannot write a TORCH_TRACE log ({type(e).__name__}: {e})")
        if self.cfg.sampler == "builtin":
            self.sampler = Sampler(
                make_walker(self.table, rec.markers, rec.traced), self.cfg.rate_hz, rec.current_key, self._emit_stacks
            )
        if self.cfg.cprofile_dir:
            from dynaprof.capture.cprofile import CompileProfiler

            self.cprofile = CompileProfiler(self.cfg.cprofile_dir, rec.warn)
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

    def _emit_stacks(self, items: list[list[Any]]) -> None:
        new = self.table.take_new()
        if new:
            self.journal.write({"t": "fn", "items": new})
        self.journal.write({"t": "stacks", "items": items})

    def finish(self) -> None:
        """Write everything still held in memory and the end record (runs once, from atexit)."""
        if self._finished:
            return
        self._finished = True
        rec = self.recorder
        try:
            if self.sampler is not None:
                self.sampler.stop()
                self.journal.write(
                    {
                        "t": "sampler",
                        "source": "builtin",
                        "requested_hz": self.cfg.rate_hz,
                        "samples": self.sampler.samples,
                        "seconds": self.sampler.window_seconds,
                        "notes": self.sampler.notes,
                    }
                )
            if rec is not None:
                rec.flush_guards()
                for w in rec.unfinished():
                    self.journal.write({"t": "unfinished", "key": w.key})
                self.journal.write({"t": "device", "device": _device_name()})
            if self.cprofile is not None:
                self.cprofile.finish(self.journal.write)
        except Exception as e:  # never lose the end record over a late failure
            self.journal.write({"t": "warn", "msg": f"finishing capture: {type(e).__name__}: {e}"})
        self.journal.write(
            {
                "t": "end",
                "exit_status": self.exit_status,
                "reason": self.end_reason,
                "ts": round((time.time_ns() - self.t0_ns) / 1e9, 6),
            }
        )
        self.journal.close()

    def _forked(self) -> None:
        """In a forked child: record nothing and write nothing into the parent's run folder
        (forked children are not profiled; their compiles are not in the session)."""
        self.journal.disable()
        self.cprofile = None
        self.sampler = None
        self._finished = True
        if self.recorder is not None:
            self.recorder.on_window_start = lambda _tid: None
            self.recorder.on_window_end = lambda _tid: None

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        self.exit_status = 128 + signum
        self.end_reason = "signal"
        self.finish()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    # -- running the target like the interpreter does --------------------------------------------
    def _argv0(self) -> str:
        return self.cfg.target if self.cfg.kind == "script" else "-m"

    def run(self) -> int:
        cfg = self.cfg
        try:
            if cfg.kind == "script":
                path = cfg.target if os.path.isabs(cfg.target) else os.path.join(os.getcwd(), cfg.target)
                sys.argv = [cfg.target, *cfg.args]
                sys.path[0] = os.path.dirname(os.path.realpath(path))
                _run_script(path)
            else:
                sys.argv = ["-m", *cfg.args]  # runpy puts the module's file in argv[0]
                sys.path[0] = os.getcwd()
                runpy.run_module(cfg.target, run_name="__main__", alter_sys=True)
        except SystemExit as e:
            self.exit_status = _exit_code(e.code)
        except KeyboardInterrupt as e:
            _print_exception(e)
            self.exit_status, self.end_reason = 130, "interrupted"
        except BaseException as e:
            _print_exception(e)
            self.exit_status, self.end_reason = 1, "exception"
        return self.exit_status


def _run_script(path: str) -> None:
    """Execute a file as the ``__main__`` module, the way ``python path`` does (runpy.run_path
    would rewrite sys.argv[0] and keep __file__ relative, unlike the interpreter)."""
    import builtins
    import importlib.machinery
    import types

    with io.open_code(path) as fh:
        source = fh.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__spec__ = None
    main.__package__ = None
    main.__cached__ = None  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _print_exception(exc: BaseException) -> None:
    """Print like the interpreter would: the traceback starts at the user's code."""
    tb: TracebackType | None = exc.__traceback__
    skip = (os.path.abspath(__file__), os.path.abspath(runpy.__file__))
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) in skip:
        tb = tb.tb_next
    exc.__traceback__ = tb  # the default excepthook prints the exception's own traceback
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception:
        traceback.print_exception(type(exc), exc, tb)
    sys.stderr.flush()


def _int_env(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def _device_name() -> str | None:
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.cuda.is_initialized():  # never initialise CUDA ourselves
            return f"cuda: {torch.cuda.get_device_name(torch.cuda.current_device())}"
        return "cuda (available)" if torch.cuda.is_available() else "cpu"
    except Exception:
        return None


def main() -> None:
    raw = os.environ.pop(CONFIG_ENV, None)
    if raw is None:
        print("dynaprof: the capture child needs its configuration", file=sys.stderr)
        sys.exit(2)
    cfg = ChildConfig(**json.loads(raw))
    child = Child(cfg)
    child.start()
    sys.exit(child.run())
