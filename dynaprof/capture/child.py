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
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import TracebackType
from typing import Any

from dynaprof.capture.core import IN_PROCESS, Capture, CaptureOptions, DynamoWatcher, int_env
from dynaprof.capture.journal import JournalWriter
from dynaprof.model.environment import compile_env, redact_argv
from dynaprof.model.journal import JOURNAL_SCHEMA
from dynaprof.version import __version__

CONFIG_ENV = "DYNAPROF_CHILD"


_CAPTURE = CaptureOptions()


@dataclass
class ChildConfig:
    """What the capture child runs, and its capture options: ``CaptureOptions``' fields (less
    ``use_signal``), flat so that the launcher passes them as JSON; their defaults are its."""

    journal: str
    kind: str  # script | module
    target: str
    args: list[str]
    sampler: str = _CAPTURE.sampler  # builtin | none (py-spy runs beside the child)
    rate_hz: float = _CAPTURE.rate_hz
    adapt_rate: bool = _CAPTURE.adapt_rate
    signal_floor_s: float | None = _CAPTURE.signal_floor_s
    inline_profile: bool = _CAPTURE.inline_profile
    cprofile_dir: str | None = _CAPTURE.cprofile_dir
    torch_trace_dir: str | None = _CAPTURE.torch_trace_dir
    time_calls: bool = _CAPTURE.time_calls
    aot_components: bool = _CAPTURE.aot_components
    fold_parametrizations: bool = _CAPTURE.fold_parametrizations
    extra: dict[str, Any] = field(default_factory=dict)

    def capture_options(self) -> CaptureOptions:
        shared = {f.name for f in fields(CaptureOptions)} & {f.name for f in fields(self)}
        return CaptureOptions(**{name: getattr(self, name) for name in sorted(shared)})


class Child:
    def __init__(self, cfg: ChildConfig) -> None:
        self.cfg = cfg
        self.t0_ns = time.time_ns()
        self.journal = JournalWriter(Path(cfg.journal))
        self.capture = Capture(
            self.journal,
            self.t0_ns,
            cfg.capture_options(),
        )
        self.exit_status = 0
        self.end_reason = "exited"
        self._finished = False

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self.journal.write(
            {
                "t": "start",
                "schema": JOURNAL_SCHEMA,
                "pid": os.getpid(),
                "argv": redact_argv([self._argv0(), *self.cfg.args]),
                "cwd": os.getcwd(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "hostname": socket.gethostname(),
                "epoch_ns": self.t0_ns,
                "dynaprof": __version__,
                "target": self.cfg.target,
                "rank": int_env("RANK"),
                "world_size": int_env("WORLD_SIZE"),
                "tid": threading.main_thread().ident,
                "env": compile_env(os.environ),
            }
        )
        os.register_at_fork(after_in_child=self._forked)
        atexit.register(self.finish)
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_sigterm)
        IN_PROCESS.claim_for_run()  # dynaprof.profile() inside the script: refused, this run records all
        if "torch._dynamo" in sys.modules:
            self.install()
        else:
            sys.meta_path.insert(0, DynamoWatcher(self.install))

    def install(self) -> None:
        self.capture.install()

    def finish(self) -> None:
        """Write everything still held in memory and the end record (runs once, from atexit)."""
        if self._finished:
            return
        self._finished = True
        self.capture.finish_records()
        self.capture.end(self.exit_status, self.end_reason)

    def _forked(self) -> None:
        """In a forked child: record nothing and write nothing into the parent's run folder
        (forked children are not profiled; their compiles are not in the session)."""
        self.capture.forked()
        self._finished = True

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


def main() -> None:
    raw = os.environ.pop(CONFIG_ENV, None)
    if raw is None:
        print("dynaprof: the capture child needs its configuration", file=sys.stderr)
        sys.exit(2)
    cfg = ChildConfig(**json.loads(raw))
    child = Child(cfg)
    child.start()
    sys.exit(child.run())
