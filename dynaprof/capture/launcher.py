"""The parent side of ``dynaprof run``: start the child, pass signals on, collect the outcome.

The child inherits stdin, stdout, stderr, the working directory and the environment, so the
script behaves as under plain ``python``. On an interactive terminal the child gets its own
process group and the terminal's foreground, so Ctrl-C reaches the script exactly once (as it
would without dynaprof) while the parent keeps running to save the profile. Signals sent to the
parent itself (``kill``, ``timeout``) are forwarded to the child.

The live status line on a terminal is ``capture/progress.py``'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from dynaprof.capture.boot.sitecustomize import ROOT_ENV, SAVED_PATH_ENV
from dynaprof.capture.child import CONFIG_ENV, ChildConfig
from dynaprof.capture.progress import PROGRESS_ENV, Progress

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
#: holds the child's ``sitecustomize`` (``capture/boot/sitecustomize.py``), put first on PYTHONPATH
_BOOT_DIR = str(Path(__file__).resolve().parent / "boot")
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class LaunchResult:
    exit_status: int
    signal: int | None
    wall_s: float
    pid: int


def _foreground_tty() -> int | None:
    """The terminal's fd when we are its foreground job, else None."""
    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
            return fd
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _take_foreground(fd: int) -> Callable[[], None]:
    def preexec() -> None:  # runs in the child between fork and exec
        os.setpgid(0, 0)
        old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            os.tcsetpgrp(fd, os.getpgrp())
        finally:
            signal.signal(signal.SIGTTOU, old)

    return preexec


@contextmanager
def _forward_signals(proc: subprocess.Popen[bytes]) -> Iterator[list[int]]:
    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    old = {s: signal.signal(s, forward) for s in _FORWARDED}
    try:
        yield received
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def interpreter_command(cfg: ChildConfig) -> list[str]:
    """``python script.py args`` or ``python -m module args``: what the user would have typed."""
    if cfg.kind == "module":
        return [sys.executable, "-m", cfg.target, *cfg.args]
    return [sys.executable, cfg.target, *cfg.args]


def launch(
    cfg: ChildConfig, on_started: Callable[[int], None] | None = None, progress: Progress | None = None,
    extra_env: dict[str, str] | None = None, output: Path | None = None,
) -> LaunchResult:
    """Run the child; ``extra_env``: variables set for it on top of ours (``--repeat``'s cache folders);
    ``output``: a file for its stdout and stderr, its stdin empty (a run the user did not ask to see)."""
    env = dict(os.environ)
    env.update(extra_env or {})
    env[CONFIG_ENV] = dataclasses.replace(cfg, platform=cfg.platform or platform.platform()).to_json()
    # the interpreter runs the script itself; sitecustomize starts the capture, then puts these back
    env.pop(SAVED_PATH_ENV, None)
    if "PYTHONPATH" in env:
        env[SAVED_PATH_ENV] = env["PYTHONPATH"]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_BOOT_DIR, env.get("PYTHONPATH")) if p)
    env[ROOT_ENV] = _PACKAGE_PARENT
    if progress is not None:  # the child erases the line itself when a compile ends (no race)
        env[PROGRESS_ENV] = str(progress.flag)
    tty = _foreground_tty() if output is None else None
    t0 = time.perf_counter()
    try:
        with open(output, "wb") if output is not None else contextlib.nullcontext() as out:
            proc = subprocess.Popen(
                interpreter_command(cfg),
                env=env,
                preexec_fn=_take_foreground(tty) if tty is not None else None,
                stdin=subprocess.DEVNULL if out is not None else None,
                stdout=out,
                stderr=out,
            )
    except OSError as e:
        from dynaprof.errors import DynaprofError

        raise DynaprofError(f"cannot start {sys.executable}: {e.strerror or e}") from e
    try:
        with _forward_signals(proc):
            if on_started is not None:
                on_started(proc.pid)
            rc = proc.wait()
    finally:
        if tty is not None:
            _reclaim_foreground(tty)
    wall = time.perf_counter() - t0
    if rc < 0:
        return LaunchResult(128 + (-rc), -rc, wall, proc.pid)
    return LaunchResult(rc, None, wall, proc.pid)


def _reclaim_foreground(fd: int) -> None:
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(fd, os.getpgrp())
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, old)
