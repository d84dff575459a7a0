"""The first version's stack walker, kept behind a test-only switch (``DYNAPROF_LEGACY_WALKER=1``).

It reuses the previous sample's frames (held by strong reference) and reads translator and
attempt-loop locals through ``f_locals``. Both perturb the profiled program: a held frame whose
function returned is finalized inside the *next* signal, in the middle of Dynamo's tracing, and
``f_locals`` caches every local on the frame. tests/e2e/test_differential.py runs the corpus with it
to show the differential check catches that. Never used otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import CodeType, FrameType

from dynaprof.capture.own_code import own_file
from dynaprof.capture.stacks import FunctionTable, Markers

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


class LegacyStackWalker:
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
        if own_file(code.co_filename):
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
        self, frame: FrameType | None, tid: int | None = None, keep: list[FrameType] | None = None
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
