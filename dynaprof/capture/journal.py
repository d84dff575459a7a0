"""The capture journal seen from capture: one JSON object per line, appended and flushed as events happen.

The profiled script runs in a child process that writes here; the parent (or a later
``dynaprof report``) assembles the session from it. Because every record is a complete line
flushed to the OS, a script that crashes, calls ``os._exit`` or is killed leaves every record
written before that moment; a torn last line is detected and skipped by the reader.

The records are ``dynaprof.model.journal``'s types (one ``TypedDict`` per record type, key ``t``:
start, torch, hooks, warn, fn, compile_start, compile_end, span, metrics, guards, inline, stacks,
sampler, cprofile, unfinished, device, end), read by ``dynaprof.ingest.assemble``. ``write`` does
not check them (mypy does): it is on the sampler's path.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynaprof.model.journal import JournalRecord


class JournalWriter:
    """Thread-safe appender; ``disable()`` makes it a no-op (in forked children)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the run
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self.enabled = True

    def write(self, record: JournalRecord) -> None:
        if not self.enabled or os.getpid() != self._pid:
            return
        try:
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_fallback)
        except ValueError:  # e.g. a circular structure: drop the record, never the script
            return
        with self._lock:
            if self._fh.closed:
                return
            try:
                self._fh.write(line + "\n")
                self._fh.flush()
            except OSError as e:  # disk full, I/O error: stop recording, let the script run on
                self.enabled = False
                sys.stderr.write(f"dynaprof: cannot write {self.path} ({e.strerror or e}); "
                                 "profiling stopped, the script continues\n")

    def disable(self) -> None:
        self.enabled = False

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                try:
                    self._fh.close()
                except OSError:  # the flush on close can hit a full disk too
                    pass


def _fallback(obj: object) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return sorted(obj, key=str) if isinstance(obj, (set, frozenset)) else list(obj)
    return str(obj)


def read_journal(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """Yield (line number, record); record is None for a line that is not valid JSON (torn)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                yield lineno, None
                continue
            yield lineno, rec if isinstance(rec, dict) else None
