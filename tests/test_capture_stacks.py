"""The in-process sampler's stack walking: correct with prefix reuse, never raises into user code."""

from __future__ import annotations

import sys
from types import FrameType

from dynaprof.capture.sampler import Sampler
from dynaprof.capture.stacks import FunctionTable, Markers, StackWalker


def _names(table: FunctionTable, ids: tuple[int, ...]) -> list[str]:
    return [table.info[i][0] for i in ids]


def _naive(frame: FrameType | None) -> list[str]:
    out = []
    while frame is not None:
        out.append(getattr(frame.f_code, "co_qualname", frame.f_code.co_name))
        frame = frame.f_back
    return list(reversed(out))


class Tracer:
    """Stands in for Dynamo's translator: `run` frames carry the traced code in `self.f_code`."""

    def __init__(self, code: object) -> None:
        self.f_code = code

    def run(self, then: object) -> object:
        return then()  # type: ignore[operator]


def user_fn() -> None:
    pass


def test_walk_matches_a_naive_walk_across_changing_stacks() -> None:
    table = FunctionTable()
    walker = StackWalker(table, Markers())
    seen: list[tuple[list[str], list[str]]] = []

    def leaf_a() -> None:
        f = sys._getframe()
        seen.append((_names(table, walker.walk(f, 1)[0]), _naive(f)))

    def leaf_b() -> None:
        f = sys._getframe()
        seen.append((_names(table, walker.walk(f, 1)[0]), _naive(f)))
        leaf_a()

    def mid() -> None:
        leaf_a()
        leaf_b()
        leaf_a()

    mid()
    leaf_b()
    assert len(seen) == 6
    for got, want in seen:
        assert got == want


def test_traced_view_reads_translator_locals() -> None:
    table = FunctionTable()
    markers = Markers(run_codes=frozenset({Tracer.run.__code__}), traced_code=lambda loc: (loc["self"].f_code, 0))
    walker = StackWalker(table, markers)
    out: list[tuple[int, ...]] = []
    outer, inner = Tracer(user_fn.__code__), Tracer(test_walk_matches_a_naive_walk_across_changing_stacks.__code__)
    outer.run(lambda: inner.run(lambda: out.append(walker.walk(sys._getframe(), 1)[1])))
    assert [table.info[i][0] for i in out[0]] == ["user_fn", "test_walk_matches_a_naive_walk_across_changing_stacks"]
    assert [table.info[i][3] for i in out[0]] == ["traced", "traced"]


def test_signal_handler_never_raises_and_never_reenters() -> None:
    table = FunctionTable()
    s = Sampler(StackWalker(table, Markers()), 1000.0, lambda tid: ("0/0", 0), lambda items: None)
    assert s.main_tid is not None
    s._last_ns[s.main_tid] = 0
    calls = []

    def boom(*a: object) -> None:
        calls.append(1)
        s._on_signal(14, sys._getframe())  # a tick arriving inside the handler is ignored
        raise IndexError("broken")

    s._record = boom  # type: ignore[method-assign]
    s._on_signal(14, sys._getframe())  # must not raise
    assert calls == [1] and s.errors == 1 and "IndexError" in s.notes[0]


def test_samples_are_weighted_by_elapsed_wall_time() -> None:
    table = FunctionTable()
    emitted: list[list[object]] = []
    s = Sampler(StackWalker(table, Markers()), 1000.0, lambda tid: ("0/0", 0), emitted.extend, use_signal=False)
    tid = 7
    s._last_ns[tid] = 0
    s._record(sys._getframe(), tid, 0.25, s._thread_agg)
    s._record(sys._getframe(), tid, 0.5, s._thread_agg)
    s.flush()
    (row,) = emitted
    assert row[0] == "0/0" and row[5] == 2 and row[6] == 0.75  # type: ignore[index]


def test_compiler_view_starts_at_the_compile_root() -> None:
    table = FunctionTable()

    def compile_root(then: object) -> object:
        return then()  # type: ignore[operator]

    walker = StackWalker(table, Markers(root_codes=frozenset({compile_root.__code__})))
    got: list[tuple[list[str], list[str]]] = []

    def leaf() -> None:
        f = sys._getframe()
        got.append((_names(table, walker.walk(f, 1)[0]), _naive(f)))

    compile_root(leaf)
    leaf()  # outside any compile: the whole stack
    (inside, full_inside), (outside, full_outside) = got
    assert inside[0].endswith("compile_root") and inside[-1].endswith("leaf")
    assert inside == full_inside[full_inside.index(inside[0]):]
    assert len(inside) < len(full_inside)
    assert outside == full_outside


def test_attempt_is_read_fresh_even_when_its_frame_is_reused() -> None:
    """The attempt loop's frame stays alive across attempts; its local changes under it."""
    table = FunctionTable()

    def loop(got: list[int | None]) -> None:
        for attempt in range(3):  # noqa: B007 - read through the frame, like torch's restart loop
            leaf(got)

    def leaf(got: list[int | None]) -> None:
        got.append(walker.walk(sys._getframe(), 1)[2])

    walker = StackWalker(table, Markers(attempt_codes=frozenset({loop.__code__})))
    got: list[int | None] = []
    loop(got)
    assert got == [0, 1, 2]
