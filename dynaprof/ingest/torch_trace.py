"""Streaming reader for TORCH_TRACE structured logs (``dedicated_log_torch_trace_*.log``).

A log is a sequence of records. Each record is one glog-prefixed line holding a JSON envelope,
followed by zero or more payload lines that each start with a TAB::

    V1130 17:41:19.065000 4967 torch/_dynamo/utils.py:2350] {"chromium_event": {}, "frame_id": 0, ...}
    \t{
    \t"name": "dynamo",

The event type is the envelope's first key. The reader never holds the file or a whole payload:
envelopes are JSON-decoded only for the types the consumer asks for (the rest are recognised from
their first key without decoding), and payload lines are handed to the consumer's handler in
bounded chunks, or skipped without decoding when nobody asked for them. Files may be plain or
gzip (detected by magic bytes). ``docs/torch-trace.md`` describes the import as a whole.

Public here: ``is_torch_trace``, ``resolve_log``, ``rank_logs``; the import itself (``import_torch_trace``,
``import_torch_trace_ranks``) is in ``ingest.trace_to_session``, which builds on this reader.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, cast

from dynaprof.errors import DynaprofError
from dynaprof.fmt import plural

if TYPE_CHECKING:
    pass

GZIP_MAGIC = b"\x1f\x8b"
LOG_PREFIX = "dedicated_log_torch_trace_"
#: per-rank log names: ``..._rank_<N>_<random>.log`` (torch) or ``..._rank_<N>.log`` (renamed, collected)
_RANK_FILE = re.compile(r"dedicated_log_torch_trace_rank_(\d+)(?:_|\.log)")
#: glog prefix torch writes: level, MMDD, time, a process id column, the emitting source line
_GLOG = re.compile(rb"(?:\[rank(\d+)\]:)?[A-Z](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))? +(\d+) ")
#: payload lines are handed to handlers in chunks of at most this many lines
CHUNK_LINES = 4096
#: problems spelled out in warnings; the rest are only counted
MAX_MESSAGES = 5
#: a file whose first this-many lines hold no record is not a trace log
SNIFF_LINES = 200
#: most payload bytes a Collect handler keeps
MAX_COLLECT_BYTES = 8 << 20


class PayloadHandler(Protocol):
    """Receives one record's payload: raw lines (leading TAB and trailing newline included)."""

    def feed(self, lines: list[bytes]) -> None: ...

    def done(self) -> None: ...


class Event:
    """One record. ``meta`` is the decoded envelope (``None`` when its type was not asked for).
    Set ``payload`` to a handler before asking for the next event to receive the payload."""

    __slots__ = ("lineno", "meta", "payload", "prefix", "type")

    def __init__(self, lineno: int, etype: str, meta: dict[str, Any] | None, prefix: bytes) -> None:
        self.lineno = lineno
        self.type = etype
        self.meta = meta
        self.prefix = prefix
        self.payload: PayloadHandler | None = None

    def glog(self) -> tuple[int | None, float | None, int | None, str | None]:
        """From the glog prefix: (the process/thread id column, seconds since about the start of
        the year, the ``[rankN]:`` prefix, the raw ``MM-DDTHH:MM:SS.ffffff`` stamp)."""
        m = _GLOG.match(self.prefix)
        if m is None:
            return None, None, None, None
        rank, month, day, hh, mm, ss, frac, tid = (g.decode() if g else "" for g in m.groups())
        secs = (int(month) * 31 + int(day)) * 86400 + int(hh) * 3600 + int(mm) * 60 + int(ss) + 0.0
        secs += int(frac) / 10 ** len(frac) if frac else 0.0
        stamp = f"{month}-{day}T{hh}:{mm}:{ss}" + (f".{frac}" if frac else "")
        return int(tid), secs, int(rank) if rank else None, stamp


#: problem classes, as tlparse counts them (its ``Stats``), in the order warnings list them
PROBLEMS: dict[str, tuple[str, str]] = {
    "truncated": ("truncated record", "truncated records"),
    "md5": ("payload md5 mismatch", "payload md5 mismatches"),
    "json": ("invalid JSON", "invalid JSON"),
    "not_record": ("line that is not a record", "lines that are not records"),
}


class ReadStats:
    """What went wrong while reading, for ``capture.warnings`` (or a strict-mode error).

    Problems are counted per class (``PROBLEMS``); the first few are spelled out with their line
    numbers. In strict mode the whole log is still read, so the error can say how many there were."""

    def __init__(self, path: Path, strict: bool) -> None:
        self.path = path
        self.strict = strict
        self.records = 0
        self.counts: Counter[str] = Counter()
        self.messages: list[str] = []
        self.first: tuple[int, str] | None = None  # (line, message) of the first problem
        self.truncated = False
        self.unknown: Counter[str] = Counter()
        #: whether the payload now being handed to a handler passed its md5 check
        self.payload_ok = True

    @property
    def malformed(self) -> int:
        return sum(self.counts.values())

    def problem(self, lineno: int, message: str, kind: str = "json") -> None:
        self.counts[kind] += 1
        if self.first is None:
            self.first = (lineno, message)
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(f"line {lineno}: {message}")

    def raise_if_strict(self) -> None:
        """Strict mode: one line naming the first problem's ``file:line`` and how many there were."""
        if not self.strict or self.first is None:
            return
        lineno, message = self.first
        n = self.malformed
        kinds = ", ".join(f"{c} {PROBLEMS[k][c != 1]}" for k in PROBLEMS if (c := self.counts[k]))
        raise DynaprofError(f"{self.path}:{lineno}: {message} ({plural(n, 'problem')} in this log: {kinds})")

    def warnings(self) -> list[str]:
        out: list[str] = []
        if self.truncated:
            out.append(f"{self.path}: the log ends mid-record (truncated); the last compile may be incomplete")
        rest = {k: c for k, c in self.counts.items() if c and k != "truncated"}
        if rest:
            kinds = ", ".join(f"{c} {PROBLEMS[k][c != 1]}" for k in PROBLEMS if (c := rest.get(k, 0)))
            shown = "; ".join(m for m in self.messages if "(truncated)" not in m)
            more = f" (first: {shown})" if shown else ""
            skipped = plural(sum(rest.values()), "malformed record or line", "malformed records or lines")
            out.append(f"skipped {skipped}: {kinds}{more}")
        if self.unknown:
            kinds = ", ".join(f"{k} ({n})" for k, n in sorted(self.unknown.items(), key=lambda kv: (-kv[1], kv[0])))
            out.append(f"skipped {sum(self.unknown.values())} events of {len(self.unknown)} unknown types: {kinds}")
        return out


def open_trace(path: Path) -> IO[bytes]:
    """Open a log for binary reading, transparently un-gzipping (sniffed by magic bytes)."""
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == GZIP_MAGIC
        return cast(IO[bytes], gzip.open(path, "rb") if gz else open(path, "rb"))  # the caller closes it
    except OSError as e:
        raise DynaprofError(f"{path}: cannot read: {e.strerror or e}") from None


def _candidates(directory: Path) -> list[Path]:
    try:
        found = [p for p in directory.iterdir() if p.name.endswith((".log", ".log.gz")) and p.is_file()]
    except OSError as e:
        raise DynaprofError(f"{directory}: cannot list: {e.strerror or e}") from None
    return sorted(found, key=lambda p: (_mtime(p), p.name))


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def rank_of(path: Path) -> int | None:
    m = _RANK_FILE.match(path.name)
    return int(m.group(1)) if m else None


def rank_logs(directory: Path) -> dict[int, Path]:
    """The newest log of each rank in a directory of ``dedicated_log_torch_trace_rank_<N>[_*].log`` files."""
    out: dict[int, Path] = {}
    for p in _candidates(directory):  # oldest first, so the newest wins
        r = rank_of(p)
        if r is not None:
            out[r] = p
    return dict(sorted(out.items()))


def resolve_log(path: Path, rank: int | None = None) -> Path:
    """The log file to read: ``path`` itself, or the newest ``*.log`` (of ``rank``) in a directory."""
    path = Path(path)
    if not path.exists():
        raise DynaprofError(f"{path}: no such file or directory")
    if not path.is_dir():
        return path
    if rank is not None:
        logs = rank_logs(path)
        if rank not in logs:
            have = ", ".join(map(str, logs)) or "none"
            raise DynaprofError(f"{path}: no TORCH_TRACE log for rank {rank} (ranks found: {have})")
        return logs[rank]
    cands = _candidates(path)
    preferred = [p for p in cands if p.name.startswith(LOG_PREFIX)] or cands
    if not preferred:
        raise DynaprofError(f"{path}: no *.log file in this directory (expected dedicated_log_torch_trace_*.log)")
    return preferred[-1]


def _is_record(line: bytes) -> bool:
    i = line.find(b"] {")
    return i > 0 and _GLOG.match(line, 0, i + 1) is not None and line[i + 3 : i + 4] == b'"'


def _sniff(fh: IO[bytes]) -> bool:
    """Does one of the first lines look like a record? Reads at most a few MiB."""
    for _ in range(SNIFF_LINES):
        line = fh.readline(1 << 16)
        if not line:
            return False
        if _is_record(line):
            return True
    return False


def _sniff_file(path: Path) -> bool:
    try:
        with open_trace(path) as fh:
            return _sniff(fh)
    except (OSError, EOFError, zlib.error, DynaprofError):
        return False


def is_torch_trace(path: Path) -> bool:
    """Cheap sniff: is ``path`` a TORCH_TRACE log, or a directory holding one (and not a run folder)?"""
    path = Path(path)
    try:
        if path.is_dir():
            if (path / "session.json").exists():
                return False
            return any(_sniff_file(p) for p in reversed(_candidates(path)))
        return path.is_file() and _sniff_file(path)
    except (OSError, DynaprofError):
        return False


_HAS_PAYLOAD = b'"has_payload"'
_HEX = frozenset(b"0123456789abcdef")


def _payload_hash(body: bytes) -> bytes | None:
    """The envelope's ``has_payload`` value (torch writes the payload's md5 there, last), or None
    when the record announces no payload. A value that is not a lowercase md5 comes back as is,
    and fails the check, as in tlparse."""
    k = body.rfind(_HAS_PAYLOAD)
    if k < 0:
        return None
    rest = body[k + len(_HAS_PAYLOAD) :].lstrip(b": ")
    if rest[:1] == b'"':
        j = rest.find(b'"', 1)
        return rest[1:j] if j > 0 else rest[1:]
    return rest[:40] or b"?"


class PayloadCheck:
    """The md5 of one record's payload as tlparse computes it (each line without its TAB and line
    end, joined by newlines), fed chunk by chunk."""

    __slots__ = ("etype", "expect", "lineno", "md5", "started")

    def __init__(self, lineno: int, etype: str, expect: bytes | None) -> None:
        self.lineno, self.etype, self.expect = lineno, etype, expect
        self.md5 = hashlib.md5(usedforsecurity=False)
        self.started = False

    def update(self, chunk: list[bytes]) -> None:
        if self.expect is None:
            return
        data = b"".join(chunk).replace(b"\n\t", b"\n")  # the first line's TAB stays: skipped below
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        if self.started:
            self.md5.update(b"\n")
        self.started = True
        self.md5.update(memoryview(data)[1 : -1 if data.endswith(b"\n") else len(data)])

    def ok(self) -> bool:
        if self.expect is None:  # nothing to check (the envelope itself was broken)
            return True
        expect = self.expect
        return len(expect) == 32 and set(expect) <= _HEX and self.md5.hexdigest().encode() == expect


class TraceReader:
    """Iterates the records of one log. ``decode``: types whose envelope is JSON-decoded;
    ``known``: types recognised but not needed; anything else is counted as unknown.

    Problems are what tlparse counts (and its ``--strict`` rejects): a line that is not a record,
    an envelope (or a payload that must be JSON) that is not valid JSON, a payload whose md5 is not
    the envelope's ``has_payload``. A log is *truncated* when its last line is an incomplete
    envelope, when its last record announced a payload and none came, or when the file ends
    without a newline inside a payload whose md5 fails. A missing final newline alone is not a problem. In
    strict mode every envelope is JSON-checked (otherwise only the decoded ones are), and the
    error is raised once the whole log was read, naming the first problem and the count."""

    def __init__(self, path: Path, *, strict: bool, decode: frozenset[str], known: frozenset[str]) -> None:
        self.path = path
        self.decode = decode
        self.known = known
        self.stats = ReadStats(path, strict)

    def events(self) -> Iterator[Event]:
        stats = self.stats
        handler: PayloadHandler | None = None
        pay: PayloadCheck | None = None  # the current record's payload (None: it announced none)
        buf: list[bytes] = []
        lineno = 0
        line = b"\n"
        type_names: dict[bytes, str] = {}
        decode, known, validate = self.decode, self.known, stats.strict

        def finish(at_eof: bool) -> None:
            nonlocal buf
            if buf:
                if pay is not None:
                    pay.update(buf)
                if handler is not None:
                    handler.feed(buf)
                buf = []
            ok = pay is None or pay.ok()
            if not ok and pay is not None:
                if at_eof and (not pay.started or not line.endswith(b"\n")):  # the log was cut here
                    stats.truncated = True
                    where = "mid-payload" if pay.started else "before the record's payload"
                    stats.problem(pay.lineno, f"the file ends {where} (truncated)", "truncated")
                else:
                    stats.problem(pay.lineno, f"payload md5 mismatch in a {pay.etype[:40]!r} record", "md5")
            if handler is not None:
                stats.payload_ok = ok
                handler.done()
                stats.payload_ok = True

        with open_trace(self.path) as fh:
            try:
                looks_right = _sniff(fh)
                fh.seek(0)
            except (OSError, EOFError, zlib.error) as e:
                raise DynaprofError(f"{self.path}: cannot read: {e}") from None
            if not looks_right:
                raise DynaprofError(f"{self.path}: not a TORCH_TRACE log (no structured records found)")
            try:
                for line in fh:  # the hot loop: keep it lean
                    lineno += 1
                    if line[0] == 9:  # TAB: a payload line
                        if pay is not None or handler is not None:
                            buf.append(line)
                            if len(buf) >= CHUNK_LINES:
                                if pay is not None:
                                    pay.update(buf)
                                if handler is not None:
                                    handler.feed(buf)
                                buf = []
                        else:
                            stats.problem(lineno, "a payload line where no record announced one", "not_record")
                        continue
                    if line == b"\n" or line == b"\r\n":
                        continue  # a stutter of the log collector: tlparse skips these too
                    if pay is not None or handler is not None:
                        finish(False)
                        pay = handler = None
                    body = line.rstrip(b"\r\n")
                    ended = len(body) < len(line)
                    i = body.find(b"] {")
                    j = body.find(b'"', i + 4) if i > 0 and body[i + 3 : i + 4] == b'"' else -1
                    if j < 0:
                        if ended:
                            stats.problem(lineno, "not a structured trace record", "not_record")
                        else:
                            stats.truncated = True
                            stats.problem(lineno, "the file ends mid-line (truncated)", "truncated")
                        continue
                    raw_type = body[i + 4 : j]
                    etype = type_names.get(raw_type)
                    if etype is None:
                        etype = type_names[raw_type] = raw_type.decode("utf-8", "replace")
                    expect = _payload_hash(body)
                    meta: dict[str, Any] | None = None
                    bad = False
                    if etype in decode:
                        meta = _decode(body[i + 2 :], etype)
                        bad = meta is None
                    elif not body.endswith(b"}"):
                        bad = True
                    elif validate:
                        bad = _decode(body[i + 2 :], etype) is None
                    if bad:
                        if ended:
                            stats.problem(lineno, f"invalid JSON in a {etype[:40]!r} record", "json")
                        else:
                            stats.truncated = True
                            stats.problem(lineno, f"the file ends mid-record (truncated) in a {etype[:40]!r} record",
                                          "truncated")
                        if expect is not None:
                            pay = PayloadCheck(lineno, etype, None)  # swallow its payload lines
                        continue
                    if expect is not None:
                        pay = PayloadCheck(lineno, etype, expect)
                    stats.records += 1
                    if meta is None and etype not in known:
                        stats.unknown[etype[:80]] += 1
                        continue
                    ev = Event(lineno, etype, meta, body[:i])
                    yield ev
                    handler = ev.payload
            except (EOFError, OSError, zlib.error, gzip.BadGzipFile) as e:
                stats.truncated = True
                stats.problem(lineno + 1, f"cannot read further ({type(e).__name__}: {e})", "truncated")
                pay = None  # its md5 cannot be checked: the read failed, not the payload
            if pay is not None or handler is not None:
                finish(True)
        if stats.records == 0:
            raise DynaprofError(f"{self.path}: not a TORCH_TRACE log (no structured records found)")
        stats.raise_if_strict()


def _decode(data: bytes, etype: str) -> dict[str, Any] | None:
    try:
        meta = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(meta, dict) or etype not in meta:
        return None
    return meta


def decode_lines(lines: list[bytes]) -> str:
    """Payload lines back to text: TAB prefix dropped, lines joined by newlines."""
    text = b"".join(lines).decode("utf-8", "replace")
    return "\n".join(part[1:] if part.startswith("\t") else part for part in text.split("\n")[: len(lines)])


# -- payload reducers: each keeps a few numbers or lines, never the whole payload ----------------

#: ``  # <file>:<line> in <func>`` provenance suffix of a printed guard (optionally `` (HINT: ...)``)
_GUARD_SOURCE = re.compile(r"# (\S[^\n#]*?):\d+ in (\S+?)(?: \(HINT: [^\n]*\))?[ \t]*$", re.M)
_GUARD_LATENCY = re.compile(r"Guard latency = ([0-9.]+) us")


class Collect:
    """Keeps the first ``max_lines`` lines of a payload and calls ``on_done(lines, cut)`` at its end."""

    def __init__(self, on_done: Callable[[list[bytes], bool], None], max_lines: int = 20000) -> None:
        self.on_done = on_done
        self.max_lines = max_lines
        self.lines: list[bytes] = []
        self.size = 0
        self.cut = False

    def feed(self, lines: list[bytes]) -> None:
        room = self.max_lines - len(self.lines)
        if room <= 0 or self.size > MAX_COLLECT_BYTES:
            self.cut = True
            return
        part = lines[:room]
        self.cut = self.cut or len(part) < len(lines)
        self.lines.extend(part)
        self.size += sum(map(len, part))

    def done(self) -> None:
        self.on_done(self.lines, self.cut)


class GuardText:
    """Reduces a ``dynamo_cpp_guards_str`` payload to its size, per-source guard lines and latency."""

    def __init__(self, on_done: Callable[[GuardText], None]) -> None:
        self.on_done = on_done
        self.chars = 0
        self.lines = 0
        self._sources: Counter[tuple[str, str]] = Counter()
        self.latency_us: float | None = None
        self._ends_empty = False

    def feed(self, lines: list[bytes]) -> None:
        text = b"".join(lines).decode("utf-8", "replace")
        self.lines += len(lines)
        if lines:
            self._ends_empty = lines[-1].rstrip(b"\r\n") in (b"\t", b"")
        self.chars += len(text) - len(lines) - text.count("\n")  # drop each TAB and newline
        self._sources.update(_GUARD_SOURCE.findall(text))  # (file, function) pairs
        tail = _GUARD_LATENCY.search(text, max(0, text.rfind("Guard latency = ")))
        if tail is not None:
            with suppress(ValueError):
                self.latency_us = float(tail.group(1))

    @property
    def sources(self) -> dict[str, int]:
        """Guard lines per user source, ``"file.py:func"``, most first."""
        counts: Counter[str] = Counter()
        for (file, func), n in self._sources.items():
            counts[f"{file}:{func}"] += n
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def done(self) -> None:
        self.chars += max(self.lines - 1, 0)  # the newlines between lines
        if self._ends_empty:  # torch 2.4's text ends with a newline: no line after it (str.splitlines)
            self.lines -= 1
        self.on_done(self)


_BREAK_AT = re.compile(r"Graph break in user code at (.+):(\d+)\s*$")
_FILE_LINE = re.compile(r'^\s*File "(.+)", line (\d+)')
_REASON_END = (
    "User code traceback:",
    "The graph break occurred in the following user code:",
    "Traceback (most recent call last):",
)
MAX_REASON_LINES = 40
MAX_REASON_CHARS = 2000


def parse_graph_break(text: str) -> tuple[str, str | None, int | None]:
    """(reason, filename, lineno) from the first lines of a ``dynamo_graph_break_reason`` payload:
    the location from its first line (else the innermost ``File`` line of the user traceback), the
    reason from the lines before the traceback."""
    lines = text.split("\n")
    where: tuple[str, int] | None = None
    m = _BREAK_AT.match(lines[0])
    if m:
        where = (m.group(1), int(m.group(2)))
    reason: list[str] = []
    innermost: tuple[str, int] | None = None
    in_reason = True
    for line in lines[1 if m else 0 :]:
        if line.startswith("Traceback (most recent call last):"):
            break
        fl = _FILE_LINE.match(line)
        if in_reason and (fl or line.startswith(_REASON_END)):
            in_reason = False
        if in_reason:
            reason.append(line.removeprefix("Graph Break Reason: "))
        elif fl:
            innermost = (fl.group(1), int(fl.group(2)))
    where = where or innermost
    kept = [line.rstrip() for line in reason]
    while kept and not kept[-1]:
        kept.pop()
    while kept and not kept[0]:
        kept.pop(0)
    out = "\n".join(kept[:MAX_REASON_LINES]).strip()[:MAX_REASON_CHARS]
    return out or "(no reason given)", where[0] if where else None, where[1] if where else None
