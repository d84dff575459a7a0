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


class StackWalker:
    def __init__(self, table: FunctionTable, markers: Markers) -> None:
        self.table = table
        self.markers = markers
        self._skip: dict[CodeType, bool] = {}

    def _own(self, code: CodeType) -> bool:
        skip = self._skip.get(code)
        if skip is None:
            skip = os.path.dirname(os.path.abspath(code.co_filename)) == _HERE
            self._skip[code] = skip
        return skip

    def walk(self, frame: FrameType | None) -> tuple[tuple[int, ...], tuple[int, ...], int | None]:
        """(compiler ids, traced ids, attempt) for the stack ending at ``frame``."""
        chain: list[FrameType] = []
        f = frame
        while f is not None:
            chain.append(f)
            f = f.f_back
        chain.reverse()
        m = self.markers
        compiler: list[int] = []
        traced: list[int] = []
        attempt: int | None = None
        for fr in chain:
            code = fr.f_code
            if self._own(code):
                continue
            compiler.append(self.table.code_id(code))
            if code in m.run_codes:
                got = m.traced_code(fr.f_locals)
                if got is not None:
                    traced.append(self.table.code_id(got[0], "traced"))
            elif code in m.property_codes:
                key = m.property_key(fr.f_locals)
                if key is not None:
                    traced.append(self.table.key_id(key))
            elif code in m.attempt_codes:
                a = fr.f_locals.get("attempt")
                if isinstance(a, int):
                    attempt = a
        return tuple(compiler), tuple(traced), attempt
