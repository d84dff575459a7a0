"""The live status line of ``dynaprof run`` on a terminal, and the child's half of it.

While the script runs, :class:`Progress` (in the parent) follows the journal the child appends to
and, only when stderr is a terminal, keeps one status line there: compile id, phase, attempt,
elapsed. It is never drawn when stderr is not a terminal, and ``DYNAPROF_PROGRESS=0`` turns it off.

The script's stdout and stderr go straight to the same terminal, unseen by dynaprof. So that its
output never lands inside the line:

* the line is drawn only while a compile is running (the script's code runs symbolically then,
  so it rarely prints) and once that compile has run for ``Progress.DELAY`` seconds; it is
  redrawn at most ``Progress.HZ`` times a second as ``\\r\\x1b[K`` + text + ``\\r`` (the cursor stays
  in column 0);
* when a compile ends, the *child* erases the line (``\\r\\x1b[K`` on its stderr) before the script
  runs on, if the line is drawn: a one-byte flag file says so, and both sides take an exclusive
  ``flock`` on it around drawing / erasing, so the parent cannot draw between the child's compile
  end and the script's next print. The parent also erases it when the script ends.

What the script prints *during* a compile (a ``print`` Dynamo runs at a graph break, a warning)
starts in column 0 over the line and may leave part of it visible until the next redraw.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dynaprof.fmt import terminal_safe

#: the child finds the flag file here (set by ``launcher.launch``)
PROGRESS_ENV = "DYNAPROF_PROGRESS_FLAG"
ERASE = "\r\x1b[K"

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]


def _lock(fd: int, on: bool) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX if on else fcntl.LOCK_UN)


class Progress:
    """Follows a journal file and draws the status line on ``stream`` (see the module docstring).
    :meth:`feed` takes journal records, :meth:`status` says what the line shows."""

    HZ = 5.0
    DELAY = 0.25
    POLL = 0.05

    def __init__(
        self, journal: Path, stream: Any, width: int = 80, flag: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.journal = journal
        self.stream = stream
        self.width = max(20, width)
        self.clock = clock
        self.flag = flag or journal.with_name("progress.flag")
        #: open compiles: key -> [compile id, phase stack, attempt, first seen]
        self.open: dict[str, list[Any]] = {}
        self.done = 0
        self._last_draw = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._offset = 0
        self._partial = b""
        self._fd = os.open(self.flag, os.O_RDWR | os.O_CREAT, 0o600)
        os.pwrite(self._fd, b"0", 0)

    @property
    def drawn(self) -> bool:
        return os.pread(self._fd, 1, 0) == b"1"

    def feed(self, r: dict[str, Any]) -> None:
        t, key = r.get("t"), str(r.get("key"))
        if t == "compile_start":
            self.open[key] = [str(r.get("cid", "?")), [], 0, self.clock()]
        elif t == "compile_end":
            if self.open.pop(key, None) is not None:
                self.done += 1
        elif t == "span" and key in self.open:
            name, cur = str(r.get("name", "?")), self.open[key]
            if r.get("ph") == "B":
                cur[1].append(name)
                if name.startswith("compile_attempt_") and name[16:].isdigit():
                    cur[2] = int(name[16:])
            elif r.get("ph") == "E" and name in cur[1]:
                del cur[1][len(cur[1]) - 1 - cur[1][::-1].index(name)]
        elif t == "end":
            self.open.clear()

    def status(self) -> str | None:
        """The line to show now, or None (no compile running, or not for long enough)."""
        if not self.open:
            return None
        key = max(self.open, key=lambda k: self.open[k][3])  # the newest: the innermost on its thread
        cid, phases, attempt, since = self.open[key]
        elapsed = self.clock() - since
        if elapsed < self.DELAY:
            return None
        phase = next((p for p in reversed(phases) if not p.startswith("compile_attempt_")), "tracing")
        text = f"dynaprof: compiling {cid} · {phase}"
        text += f" · attempt {attempt + 1}" if attempt else ""
        text += f" · {elapsed:.1f} s" + (f" · {self.done:,} done" if self.done else "")
        return terminal_safe(text)[: self.width - 1]

    def _read(self) -> None:
        try:
            with open(self.journal, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            data = b""
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                self.feed(rec)

    def poll(self) -> None:
        """Under the flag's lock: read what the journal gained, then draw or erase the line."""
        _lock(self._fd, True)
        try:
            self._read()
            text = self.status()
            if text is None:
                self._erase()
            elif self.clock() - self._last_draw >= 1.0 / self.HZ:
                self._write(ERASE + text + "\r")
                os.pwrite(self._fd, b"1", 0)
                self._last_draw = self.clock()
        finally:
            _lock(self._fd, False)

    def _erase(self) -> None:
        if self.drawn:
            self._write(ERASE)
            os.pwrite(self._fd, b"0", 0)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.POLL):
            self.poll()

    def start(self) -> Progress:
        self._thread = threading.Thread(target=self._run, name="dynaprof-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        _lock(self._fd, True)
        try:
            self._erase()
        finally:
            _lock(self._fd, False)
            os.close(self._fd)
        try:
            self.flag.unlink()
        except OSError:
            pass


def follow_progress(journal: Path, quiet: bool = False) -> Progress | None:
    """A started :class:`Progress` on stderr when stderr is a terminal (never otherwise)."""
    if quiet or os.environ.get("DYNAPROF_PROGRESS", "") == "0":
        return None
    try:
        if not os.isatty(sys.stderr.fileno()):
            return None
        width = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None
    env = os.environ.get("COLUMNS", "")
    width = int(env) if env.isdigit() and int(env) > 0 else width or 80
    try:
        return Progress(journal, sys.stderr, width).start()
    except OSError:
        return None


class ChildEraser:
    """The child's half: after each compile, erase the line if the parent drew it (under the
    flag's lock, so the parent does not draw again until the journal shows the next compile)."""

    def __init__(self, flag: str) -> None:
        self.fd = os.open(flag, os.O_RDWR)

    def __call__(self) -> None:
        try:
            _lock(self.fd, True)
            try:
                if os.pread(self.fd, 1, 0) == b"1":
                    os.write(2, ERASE.encode())
                    os.pwrite(self.fd, b"0", 0)
            finally:
                _lock(self.fd, False)
        except OSError:
            pass


def child_eraser() -> ChildEraser | None:
    """The eraser for this process when ``dynaprof run`` draws a progress line, else None."""
    flag = os.environ.get(PROGRESS_ENV)
    if not flag:
        return None
    try:
        return ChildEraser(flag)
    except OSError:
        return None
