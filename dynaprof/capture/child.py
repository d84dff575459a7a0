"""The profiled process: runs the user's script as ``python script.py`` would, with hooks.

Started by ``dynaprof.capture.launcher`` as ``python script.py ...`` itself, with its
configuration in the ``DYNAPROF_CHILD`` environment variable; ``capture/boot/sitecustomize.py``
calls ``boot`` before the interpreter runs the script. It writes the journal; the parent
assembles it.
Torch hooks are installed the moment the script first imports ``torch._dynamo`` (so a script
that never compiles pays nothing, and torch is never imported earlier than the script does).
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import platform
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynaprof.capture.core import IN_PROCESS, Capture, CaptureOptions, DynamoWatcher, int_env
from dynaprof.capture.journal import JournalWriter
from dynaprof.model.environment import compile_env, redact_argv
from dynaprof.model.journal import JOURNAL_SCHEMA
from dynaprof.version import __version__

CONFIG_ENV = "DYNAPROF_CHILD"


@dataclass
class ChildConfig:
    """What the capture child runs, and its capture options (``CaptureOptions``, declared once in
    ``model.capture_options``), passed by the launcher as JSON."""

    journal: str
    kind: str  # script | module
    target: str
    args: list[str]
    capture: CaptureOptions = field(default_factory=CaptureOptions)
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``platform.platform()``, computed by the launcher (same machine, same interpreter): here it
    #: would import ``subprocess`` and run ``uname -p`` in the user's process before the script
    platform: str = ""

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, raw: str) -> ChildConfig:
        data = json.loads(raw)
        return cls(**{**data, "capture": CaptureOptions(**data.get("capture", {}))})


class Child:
    def __init__(self, cfg: ChildConfig) -> None:
        self.cfg = cfg
        self.t0_ns = time.time_ns()
        self.journal = JournalWriter(Path(cfg.journal))
        self.capture = Capture(
            self.journal,
            self.t0_ns,
            cfg.capture,
        )
        self.exit_status: int | None = 0
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
                "platform": self.cfg.platform or platform.platform(),
                "hostname": platform.node(),  # os.uname(): socket stays unimported
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
        if self.end_reason == "exited":
            self.exit_status, self.end_reason = _outcome()
        self.capture.finish_records()
        self.capture.end(self.exit_status, self.end_reason)

    def _forked(self) -> None:
        """In a forked child: record nothing and write nothing into the parent's run folder
        (forked children are not profiled; their compiles are not in the session)."""
        self.capture.forked()
        self._finished = True

    def _argv0(self) -> str:
        return self.cfg.target if self.cfg.kind == "script" else "-m"

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        self.exit_status = 128 + signum
        self.end_reason = "signal"
        self.finish()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _outcome() -> tuple[int | None, str]:
    """(exit status, reason) as the interpreter ends, from atexit: an uncaught exception was
    printed and left in ``sys.last_value``; a ``sys.exit`` code is not visible here (None: the
    parent has the process's own status, which wins)."""
    exc = getattr(sys, "last_value", None)
    if isinstance(exc, KeyboardInterrupt):
        return 130, "interrupted"
    if isinstance(exc, BaseException):
        return 1, "exception"
    return None, "exited"


def boot() -> None:
    """Start the capture in the interpreter that is about to run the script (from ``sitecustomize``)."""
    raw = os.environ.pop(CONFIG_ENV, None)
    if raw is None:
        print("dynaprof: the capture child needs its configuration", file=sys.stderr)
        sys.exit(2)
    Child(ChildConfig.from_json(raw)).start()
