"""Turning live Python frames into the two stack views, and aggregating samples.

A sample walks the compiling thread's frames root-first and produces:
* the *compiler* stack: the real Python functions (dynaprof's own wrappers left out);
* the *traced* stack: the user functions Dynamo was symbolically executing, read from the
  ``self.f_code`` of each instruction translator's ``run`` frame, with the ``@property`` being
  resolved (``Owner.name``) inserted where Dynamo entered a getter.

Which frames are Dynamo's translators is told by ``dynaprof.capture.torch_hooks`` (the only
module that knows torch's internals) through ``Markers``. Everything here must be safe to run
inside a signal handler that interrupted the compiling thread: no locks, and only operations
that stay consistent if interrupted (``itertools.count`` ids, ``dict.setdefault``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))

FunctionKey = tuple[str, str, int, str]  # name, filename, first line, kind


@dataclass
class Markers:
    """Code objects that mark Dynamo's translator loop and property resolution."""

    run_codes: frozenset[CodeType] = frozenset()
    property_codes: frozenset[CodeType] = frozenset()
    #: (frame locals of a translator `run` frame) -> the user code being traced, or None
    traced_code: Callable[[dict[str, Any]], tuple[CodeType, int] | None] = lambda _l: None
    #: (frame locals of a property-resolution frame) -> FunctionKey of the property, or None
    property_key: Callable[[dict[str, Any]], FunctionKey | None] = lambda _l: None
    #: frames of the attempt loop; their local ``attempt`` is the current attempt index
    attempt_codes: frozenset[CodeType] = frozenset()
    #: where the compiler view starts (Dynamo's per-frame compile entry); frames above it are the
    #: user code that triggered the compile, already recorded as the frame's call site
    root_codes: frozenset[CodeType] = frozenset()


def code_name(code: CodeType) -> str:
    return getattr(code, "co_qualname", code.co_name)


class FunctionTable:
    """Interns functions to small integer ids, signal-safely."""

    def __init__(self) -> None:
        self._ids = itertools.count()
        self._by_key: dict[Any, int] = {}
        self.info: dict[int, FunctionKey] = {}
        self._emitted = 0

    def intern(self, key: Any, info: Callable[[], FunctionKey]) -> int:
        fid = self._by_key.get(key)
        if fid is None:
            new = next(self._ids)
            self.info[new] = info()
            fid = self._by_key.setdefault(key, new)
        return fid

    def code_id(self, code: CodeType, kind: str = "python") -> int:
        fid = self._by_key.get((code, kind))
        if fid is not None:
            return fid
        return self.intern((code, kind), lambda: (code_name(code), code.co_filename, code.co_firstlineno, kind))

    def key_id(self, key: FunctionKey) -> int:
        return self.intern(key, lambda: key)

    def take_new(self) -> list[list[Any]]:
        """Entries not yet handed out (for the journal), in id order."""
        ids = sorted(i for i in list(self.info) if i >= self._emitted)
        out = [[i, *self.info[i]] for i in ids]
        if ids:
            self._emitted = ids[-1] + 1
        return out


@dataclass
class SampleKey:
    frame: str | None
    attempt: int
    thread: int
    compiler: tuple[int, ...]
    traced: tuple[int, ...]


@dataclass
class Aggregate:
    """Samples summed by identical (window, attempt, thread, stacks)."""

    data: dict[tuple[Any, ...], list[float]] = field(default_factory=dict)

    def add(self, key: tuple[Any, ...], seconds: float) -> None:
        cur = self.data.get(key)
        if cur is None:
            self.data[key] = [1, seconds]
        else:
            cur[0] += 1
            cur[1] += seconds


_PLAIN, _OWN, _RUN, _PROPERTY, _ATTEMPT, _ROOT = range(6)


@dataclass
class _Chain:
    """The previous sample of one thread: its frames (root first), where each frame sits, and the
    (compiler length, traced length, index of the attempt-loop frame or -1, index of the compile root
    or -1) reached after each frame."""

    frames: list[FrameType] = field(default_factory=list)
    index: dict[int, int] = field(default_factory=dict)
    state: list[tuple[int, int, int, int]] = field(default_factory=list)
    compiler: list[int] = field(default_factory=list)
    traced: list[int] = field(default_factory=list)


class StackWalker:
    """Walks a thread's frames into (compiler ids, traced ids, attempt), fast.

    Two savings keep a sample in the tens of microseconds on 100-deep Dynamo stacks: each code
    object is classified once (one dict lookup per frame afterwards), and the previous sample's
    frames are remembered so only the frames that changed since are examined (the root-side part
    of the stack is reused, including what was read from translator locals). The previous chain is
    held by strong reference, so a frame object seen again is the same live frame, not a reused
    address.
    """

    def __init__(self, table: FunctionTable, markers: Markers) -> None:
        self.table = table
        self.markers = markers
        self._codes: dict[CodeType, tuple[int, int]] = {}
        self._prev: dict[int | None, _Chain] = {}

    def _classify(self, code: CodeType) -> tuple[int, int]:
        m = self.markers
        if os.path.dirname(os.path.abspath(code.co_filename)) == _HERE:
            kind = _OWN
        elif code in m.run_codes:
            kind = _RUN
        elif code in m.property_codes:
            kind = _PROPERTY
        elif code in m.attempt_codes:
            kind = _ATTEMPT
        elif code in m.root_codes:
            kind = _ROOT
        else:
            kind = _PLAIN
        info = (self.table.code_id(code), kind)
        self._codes[code] = info
        return info

    def walk(
        self, frame: FrameType | None, tid: int | None = None
    ) -> tuple[tuple[int, ...], tuple[int, ...], int | None]:
        """(compiler ids, traced ids, attempt) for the stack ending at ``frame``."""
        prev = self._prev.get(tid)
        if prev is None:
            prev = self._prev[tid] = _Chain()
        index, prev_frames = prev.index, prev.frames
        fresh: list[FrameType] = []
        f = frame
        base = -1
        while f is not None:
            j = index.get(id(f))
            if j is not None and prev_frames[j] is f:
                base = j
                break
            fresh.append(f)
            f = f.f_back
        # forget the frames of the previous sample that are gone
        for gone in prev_frames[base + 1 :]:
            index.pop(id(gone), None)
        del prev_frames[base + 1 :]
        del prev.state[base + 1 :]
        if base >= 0:
            n_comp, n_traced, loop, root = prev.state[base]
            del prev.compiler[n_comp:]
            del prev.traced[n_traced:]
        else:
            prev.compiler.clear()
            prev.traced.clear()
            loop = -1
            root = -1
        compiler, traced, state = prev.compiler, prev.traced, prev.state
        codes = self._codes
        m = self.markers
        for fr in reversed(fresh):
            code = fr.f_code
            info = codes.get(code) or self._classify(code)
            kind = info[1]
            if kind != _OWN:
                compiler.append(info[0])
                if kind == _RUN:
                    got = m.traced_code(fr.f_locals)
                    if got is not None:
                        traced.append(self.table.code_id(got[0], "traced"))
                elif kind == _PROPERTY:
                    key = m.property_key(fr.f_locals)
                    if key is not None:
                        traced.append(self.table.key_id(key))
                elif kind == _ROOT and root < 0:
                    root = len(compiler) - 1
                elif kind == _ATTEMPT:
                    loop = len(prev_frames)
            index[id(fr)] = len(prev_frames)
            prev_frames.append(fr)
            state.append((len(compiler), len(traced), loop, root))
        attempt = None
        if loop >= 0:  # the loop variable changes while its frame lives: read it every time
            a = prev_frames[loop].f_locals.get("attempt")
            attempt = a if isinstance(a, int) else None
        return tuple(compiler[root:] if root > 0 else compiler), tuple(traced), attempt

    def forget(self, tid: int | None) -> None:
        """Drop the remembered chain (and the frame references) once a thread stops compiling."""
        self._prev.pop(tid, None)
