"""Stacks seen from capture: live Python frames turned into the two stack views, samples aggregated.

A sample produces:
* the *compiler* stack: the real Python functions from Dynamo's per-frame compile entry up to the
  interrupted frame (dynaprof's own wrappers left out), read by walking ``f_back``;
* the *traced* stack: the user functions Dynamo was symbolically executing, with the ``@property``
  being resolved (``Owner.name``) where Dynamo entered a getter. It is not read from frames at all:
  the hooks around Dynamo's translator loop and property resolution push and pop function ids on
  a per-thread list (``TracedStacks``), and a sample copies that list.

A sample must never change the program (docs/reliability.md): it runs no user or torch code,
never reads ``f_locals`` (in 3.11 that caches every local on the frame and lengthens their lives),
and holds no frame beyond the sample that read it, so no object's last reference can drop inside
the signal handler. Everything here stays consistent if interrupted by the next signal:
no locks, only ``itertools.count`` ids and ``dict.setdefault``.

Which code objects are Dynamo's compile entry is told by ``dynaprof.capture.hooks.markers`` (the
hooks are what knows torch's internals) through ``Markers``.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from dynaprof.capture.own_code import own_file

#: Test-only switch: ``DYNAPROF_LEGACY_WALKER=1`` selects the first version's walker, which kept
#: the previous sample's frames alive and read translator locals. It perturbs the profiled program
#: (tests/e2e/test_differential.py shows it); it exists so the differential check can prove it fails.
LEGACY_WALKER_ENV = "DYNAPROF_LEGACY_WALKER"

FunctionKey = tuple[str, str, int, str]  # name, filename, first line, kind


@dataclass
class Markers:
    """Code objects that mark Dynamo's compile entry (and, for the legacy walker only, its
    translator loop, property resolution and attempt loop, read through frame locals)."""

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
    """Interns functions to small integer ids, signal-safely.

    A code object is one function per (qualified name, file, first line, kind). It is found by
    ``id()`` afterwards (hashing a code object hashes its constants and names on every lookup);
    the table keeps each code object it has seen, so an id cannot be reused while it is cached."""

    def __init__(self) -> None:
        self._ids = itertools.count()
        self._by_key: dict[Any, int] = {}
        self._by_code_id: dict[str, dict[int, int]] = {"python": {}, "traced": {}}
        self._pinned: list[CodeType] = []
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
        by_id = self._by_code_id.get(kind)
        if by_id is None:
            by_id = self._by_code_id.setdefault(kind, {})
        fid = by_id.get(id(code))
        if fid is not None:
            return fid
        fid = self.key_id((code_name(code), code.co_filename, code.co_firstlineno, kind))
        self.pin(code)
        by_id[id(code)] = fid
        return fid

    def pin(self, code: CodeType) -> None:
        """Keep ``code`` alive, so that its ``id()`` stays its own while callers cache by id."""
        self._pinned.append(code)

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

    def add(self, key: tuple[Any, ...], seconds: float, samples: int = 1) -> None:
        cur = self.data.get(key)
        if cur is None:
            self.data[key] = [samples, seconds]
        else:
            cur[0] += samples
            cur[1] += seconds


class TracedStacks:
    """Per thread: ids of the user functions (and properties) Dynamo is tracing, outermost first.

    Written only by hooks running on that thread (push on entry, truncate on exit, so an exception
    that unwinds several levels leaves the list right); read by samples, which copy it. Holds ints
    only: no reference to a translator, a frame or a user object.
    """

    def __init__(self) -> None:
        self._by_thread: dict[int, list[int]] = {}

    def enter(self, tid: int, fid: int) -> int:
        """Push ``fid``; returns the depth to truncate back to on exit."""
        stack = self.stack_of(tid)
        depth = len(stack)
        stack.append(fid)
        return depth

    def stack_of(self, tid: int) -> list[int]:
        """The thread's list itself, for a hook on a hot path to push and truncate without a call
        each (``hooks.guard_causes``); the same rules as ``enter`` and ``exit``."""
        stack = self._by_thread.get(tid)
        if stack is None:
            stack = self._by_thread.setdefault(tid, [])
        return stack

    def exit(self, tid: int, depth: int) -> None:
        stack = self._by_thread.get(tid)
        if stack is not None:
            del stack[depth:]

    def exit_if(self, tid: int, depth: int, fid: int) -> None:
        """Truncate back to ``depth`` where ``fid`` is still there: a pop below it may have cut the
        stack back, and what was pushed since is not to be cut."""
        stack = self._by_thread.get(tid)
        if stack is not None and len(stack) > depth and stack[depth] == fid:
            del stack[depth:]

    def exit_value(self, tid: int, fid: int) -> None:
        """Truncate back to below the innermost ``fid`` (a span's end names the span, not its depth)."""
        stack = self._by_thread.get(tid)
        if stack:
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] == fid:
                    del stack[i:]
                    return

    def top(self, tid: int) -> int:
        stack = self._by_thread.get(tid)
        return stack[-1] if stack else -1

    def depth(self, tid: int) -> int:
        stack = self._by_thread.get(tid)
        return len(stack) if stack is not None else 0

    def get(self, tid: int | None) -> tuple[int, ...]:
        stack = self._by_thread.get(tid) if tid is not None else None
        return tuple(stack) if stack else ()

    def forget(self, tid: int) -> None:
        stack = self._by_thread.get(tid)
        if stack is not None and not stack:
            self._by_thread.pop(tid, None)


#: what ``StackWalker`` caches per code object: its function id (>= 0), ``_OWN`` (dynaprof's own
#: frames, left out), or ``_root(fid)`` for Dynamo's compile entry (kept, and the walk stops)
_OWN = -1


def _root(fid: int) -> int:
    return -2 - fid


class StackWalker:
    """Walks a thread's frames into (compiler ids, traced ids, attempt), holding nothing.

    Each code object is classified once, then found by ``id()`` (hashing a code object hashes its
    constants and names each time: several microseconds for Dynamo's big functions). The function
    table keeps the code objects, so an id is never reused while it is in the cache; code objects
    own no user state and have no finalizers. The walk stops at Dynamo's compile entry: the frames
    below it are the user's call site, recorded once per compile. The traced view comes from
    ``TracedStacks``, the attempt from the compile window (``None`` here): no frame's locals are read.
    """

    def __init__(self, table: FunctionTable, markers: Markers, traced: TracedStacks | None = None) -> None:
        self.table = table
        self.markers = markers
        self.traced = traced if traced is not None else TracedStacks()
        self._codes: dict[int, int] = {}  # id(code) -> what to do; the table keeps the code alive
        self._own_file: dict[str, bool] = {}
        self._roots = {id(c) for c in markers.root_codes}  # ``markers`` keeps them alive

    def _classify(self, code: CodeType) -> int:
        own = self._own_file.get(code.co_filename)
        if own is None:
            own = self._own_file[code.co_filename] = own_file(code.co_filename)
        if own:
            kind = _OWN
            self.table.pin(code)
        elif id(code) in self._roots:
            kind = _root(self.table.code_id(code))
        else:
            kind = self.table.code_id(code)
        self._codes[id(code)] = kind
        return kind

    def walk(
        self, frame: FrameType | None, tid: int | None = None, keep: list[FrameType] | None = None
    ) -> tuple[tuple[int, ...], tuple[int, ...], int | None]:
        """(compiler ids, traced ids, None) for the stack ending at ``frame``.

        ``keep``: for a sampler thread reading another thread's stack, every frame visited after
        ``frame`` is appended there instead of being dropped, so the caller decides when (and on
        which thread) those references go (``Sampler._release``)."""
        codes = self._codes
        ids: list[int] = []
        append = ids.append
        f = frame
        while f is not None:
            code = f.f_code
            fid = codes.get(id(code))
            if fid is None:
                fid = self._classify(code)
            if fid >= 0:
                append(fid)
            elif fid != _OWN:
                append(-2 - fid)
                break
            f = f.f_back
            if keep is not None and f is not None:
                keep.append(f)
        f = None
        ids.reverse()
        return tuple(ids), self.traced.get(tid), None

    def forget(self, tid: int | None) -> None:
        """Nothing is remembered between samples; kept for the sampler's interface."""


def orphaned_frames(held: list[FrameType]) -> bool:
    """Whether any frame in ``held`` is referenced by nothing but ``held``: its function returned
    while a sampler thread held it, so dropping ``held`` would finalize that frame's locals on the
    sampler thread. The caller then keeps the list and lets the compiling thread drop it.

    A frame still executing is also referenced by its interpreter frame; a returned frame whose
    caller we hold references that caller (``f_back``), so the innermost returned frame is the one
    with no other reference, and finding it is enough."""
    for fr in held:  # noqa: SIM110 - a generator would add a reference and break the count
        # references: the list slot, ``fr`` and getrefcount's argument
        if sys.getrefcount(fr) <= 3:
            return True
    return False
