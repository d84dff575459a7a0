"""The in-process sampler's stack walking: correct, holds nothing, never raises into user code."""

from __future__ import annotations

import gc
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from types import FrameType

import pytest

from dynaprof.capture.legacy_walker import LegacyStackWalker
from dynaprof.capture.sampler import Sampler
from dynaprof.capture.stacks import FunctionTable, Markers, StackWalker, TracedStacks, orphaned_frames


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


@pytest.mark.parametrize("walker_cls", [StackWalker, LegacyStackWalker])
def test_walk_matches_a_naive_walk_across_changing_stacks(walker_cls: type[StackWalker]) -> None:
    table = FunctionTable()
    walker = walker_cls(table, Markers())
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


def test_legacy_traced_view_reads_translator_locals() -> None:
    table = FunctionTable()
    markers = Markers(run_codes=frozenset({Tracer.run.__code__}), traced_code=lambda loc: (loc["self"].f_code, 0))
    walker = LegacyStackWalker(table, markers)
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

    def boom(*a: object, **k: float) -> None:
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


def test_the_collectors_time_ends_in_its_own_function_not_in_the_code_it_interrupted() -> None:
    """A collection runs in C, so the sample after it carries its time: that part is split off into
    a stack ending in ``GC_FUNCTION``, counted as no sample; one that lands inside a collection
    (in a finalizer it runs) takes the collection's time so far, and the rest goes to the next."""
    from dynaprof.model.journal import GC_FUNCTION

    table = FunctionTable()
    emitted: list[list[object]] = []
    s = Sampler(StackWalker(table, Markers()), 1000.0, lambda tid: ("0/0", 0), emitted.extend)
    tid = s.main_tid
    assert tid is not None
    s._gc_fid = table.key_id(GC_FUNCTION)
    s._last_ns[tid] = time.perf_counter_ns() - 300_000_000  # the previous sample, 0.3 s ago
    s._on_gc("start", {"generation": 2})
    time.sleep(0.02)
    s._on_gc("stop", {"generation": 2})
    s._on_signal(14, sys._getframe())
    s.flush()
    by_end = {table.info[int(row[3][-1])][3]: row for row in emitted}  # type: ignore[index]
    gc_row, rest = by_end["gc"], next(r for k, r in by_end.items() if k != "gc")
    assert gc_row[5] == 0 and 0.02 <= gc_row[6] < 0.3 and rest[5] == 1  # type: ignore[index,operator]
    assert gc_row[6] + rest[6] >= 0.3  # type: ignore[index,operator]  # no time lost
    emitted.clear()
    s._on_gc("start", {"generation": 2})  # a collection still running when the next tick arrives
    time.sleep(0.02)
    s._on_signal(14, sys._getframe())
    s._on_gc("stop", {"generation": 2})
    s.flush()
    first = sum(float(r[6]) for r in emitted if table.info[int(r[3][-1])][3] == "gc")  # type: ignore[index]
    assert first >= 0.02 and s._gc_ns - s._gc_taken < 0.02e9  # only what came after the tick is left


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


def test_legacy_attempt_is_read_fresh_even_when_its_frame_is_reused() -> None:
    """The attempt loop's frame stays alive across attempts; its local changes under it."""
    table = FunctionTable()

    def loop(got: list[int | None]) -> None:
        for attempt in range(3):  # noqa: B007 - read through the frame, like torch's restart loop
            leaf(got)

    def leaf(got: list[int | None]) -> None:
        got.append(walker.walk(sys._getframe(), 1)[2])

    walker = LegacyStackWalker(table, Markers(attempt_codes=frozenset({loop.__code__})))
    got: list[int | None] = []
    loop(got)
    assert got == [0, 1, 2]


def test_traced_view_comes_from_the_hooks_stack_not_from_frames() -> None:
    table = FunctionTable()
    traced = TracedStacks()
    walker = StackWalker(table, Markers(), traced)
    tid = threading.get_ident()
    outer = traced.enter(tid, table.code_id(user_fn.__code__, "traced"))
    inner = traced.enter(tid, table.key_id(("Linear.weight", "parametrize.py", 1, "property")))
    got = walker.walk(sys._getframe(), tid)
    assert [table.info[i][0] for i in got[1]] == ["user_fn", "Linear.weight"] and got[2] is None
    traced.exit(tid, inner)
    assert [table.info[i][0] for i in walker.walk(sys._getframe(), tid)[1]] == ["user_fn"]
    traced.exit(tid, outer)
    assert walker.walk(sys._getframe(), tid)[1] == ()
    assert walker.walk(sys._getframe(), tid + 1)[1] == ()  # per thread


def test_an_exception_unwinding_several_levels_leaves_the_traced_stack_right() -> None:
    traced = TracedStacks()
    base = traced.enter(1, 10)
    traced.enter(1, 11)
    traced.enter(1, 12)  # exits skipped by an exception
    traced.exit(1, base)
    assert traced.get(1) == () and traced.depth(1) == 0


def test_a_pending_entry_is_dropped_only_where_it_still_is() -> None:
    """A property opened before its getter's push that never got one is dropped at the next
    push; a pop below it may have cut it already, and what was pushed since stays."""
    traced = TracedStacks()
    traced.enter(1, 10)
    pending = traced.enter(1, 99)
    traced.exit_if(1, pending, 99)
    assert traced.get(1) == (10,)
    pending = traced.enter(1, 99)
    traced.exit_value(1, 10)  # the enclosing translator's pop cut it
    traced.enter(1, 20)
    traced.enter(1, 21)  # a later call, at the pending entry's old depth
    traced.exit_if(1, pending, 99)
    assert traced.get(1) == (20, 21)


class _Finalized:
    """Records when the object it watches is finalized."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def watch(self, obj: object, name: str) -> None:
        weakref.finalize(obj, self.log.append, name)


class _Payload:
    pass


@pytest.mark.parametrize("walker_cls", [StackWalker, LegacyStackWalker])
def test_a_walk_keeps_no_frame_alive(walker_cls: type[StackWalker]) -> None:
    """A local of a sampled frame is freed when its function returns, not at some later sample."""
    table = FunctionTable()
    walker = walker_cls(table, Markers())
    fin = _Finalized()

    def sampled() -> None:
        obj = _Payload()
        fin.watch(obj, "obj")
        walker.walk(sys._getframe(), 1)

    sampled()
    fin.log.append("returned")
    walker.walk(sys._getframe(), 1)  # the next sample: the legacy walker drops the old frames here
    if walker_cls is StackWalker:
        assert fin.log == ["obj", "returned"]
    else:  # the first version's bug, which the differential check must catch
        assert fin.log == ["returned", "obj"]


@pytest.mark.parametrize("walker_cls", [StackWalker, LegacyStackWalker])
def test_a_walk_never_lengthens_a_local_s_life(walker_cls: type[StackWalker]) -> None:
    """Reading ``f_locals`` caches every local in a dict on the frame (3.11): a rebound local's old
    value then lives on until the frame ends."""
    table = FunctionTable()

    fin = _Finalized()

    class Tracer:  # stands in for a translator whose ``run`` frame the legacy walker reads
        def __init__(self) -> None:
            self.f_code = user_fn.__code__

        def run(self, then: object) -> None:
            obj: object = _Payload()
            fin.watch(obj, "old")
            then()  # type: ignore[operator]
            obj = None  # the old value must die here
            fin.log.append("rebound")
            del obj

    walker = walker_cls(
        table, Markers(run_codes=frozenset({Tracer.run.__code__}), traced_code=lambda loc: (loc["self"].f_code, 0))
    )
    Tracer().run(lambda: walker.walk(sys._getframe(), 1))
    if walker_cls is StackWalker:
        assert fin.log == ["old", "rebound"]
    else:
        assert fin.log[0] == "rebound"


def test_the_compiler_view_stops_at_the_innermost_compile_root() -> None:
    table = FunctionTable()

    def compile_root(then: object) -> object:
        return then()  # type: ignore[operator]

    walker = StackWalker(table, Markers(root_codes=frozenset({compile_root.__code__})))
    got: list[list[str]] = []
    compile_root(lambda: compile_root(lambda: got.append(_names(table, walker.walk(sys._getframe(), 1)[0]))))
    (names,) = got
    assert names.count(names[0]) == 1 and names[0].endswith("compile_root")


def test_orphaned_frames_tells_a_returned_frame_from_a_running_one() -> None:
    def running() -> bool:
        return orphaned_frames([sys._getframe()])

    def returned() -> FrameType:
        return sys._getframe()

    assert running() is False
    assert orphaned_frames([returned()]) is True


def test_signal_handler_holds_the_garbage_collector_off() -> None:
    table = FunctionTable()
    s = Sampler(StackWalker(table, Markers()), 1000.0, lambda tid: ("0/0", 0), lambda items: None)
    assert s.main_tid is not None
    s._last_ns[s.main_tid] = 0
    seen: list[bool] = []
    real = s._record

    def record(*a: object, **k: float) -> None:
        seen.append(gc.isenabled())
        real(*a, **k)  # type: ignore[arg-type]

    s._record = record  # type: ignore[method-assign]
    assert gc.isenabled()
    s._on_signal(14, sys._getframe())
    assert seen == [False] and gc.isenabled() and s.samples == 1
    gc.disable()
    try:  # a script that runs with the collector off keeps it off
        s._on_signal(14, sys._getframe())
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_thread_sampler_hands_a_returned_frame_to_the_compiling_thread() -> None:
    """A frame that returned while the sampler thread held it is not dropped on that thread."""
    table = FunctionTable()
    s = Sampler(StackWalker(table, Markers()), 1000.0, lambda tid: ("0/0", 0), lambda items: None, use_signal=False)
    fin = _Finalized()

    def returned() -> FrameType:
        obj = _Payload()
        fin.watch(obj, "obj")
        return sys._getframe()

    s._release([returned()])
    assert fin.log == [] and s.orphaned == 1
    s.window_ended(threading.get_ident())  # on the compiling thread, outside the compile
    assert fin.log == ["obj"]
    s._release([sys._getframe()])
    assert s.orphaned == 1


def test_thread_sampler_samples_another_thread() -> None:
    table = FunctionTable()
    emitted: list[list[object]] = []
    s = Sampler(StackWalker(table, Markers()), 2000.0, lambda tid: ("0/0", 0), emitted.extend, use_signal=False)
    stop = threading.Event()

    def busy_compile_stand_in() -> None:
        while not stop.is_set():
            sum(range(200))

    t = threading.Thread(target=busy_compile_stand_in)
    t.start()
    assert t.ident is not None
    s.window_started(t.ident)
    time.sleep(0.2)
    s.window_ended(t.ident)
    stop.set()
    t.join()
    s.stop()
    assert s.samples > 5 and s.errors == 0
    names = {table.info[i][0] for row in emitted for i in row[3]}  # type: ignore[union-attr]
    assert any("busy_compile_stand_in" in n for n in names)


def test_a_low_achieved_rate_is_said() -> None:
    table = FunctionTable()
    s = Sampler(StackWalker(table, Markers()), 1000.0, lambda tid: ("0/0", 0), lambda items: None)
    s.samples, s.window_seconds = 100, 1.0  # 100 Hz of the 1,000 asked
    s.stop()
    assert any("achieved 100 of the 1,000 samples/s" in n for n in s.notes)


@pytest.fixture
def free_sigalrm() -> Iterator[None]:
    """pytest-timeout holds SIGALRM in this process: lend it to the test, then give it back."""
    import signal

    handler = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    timer = signal.setitimer(signal.ITIMER_REAL, 0, 0)
    try:
        yield
    finally:
        signal.signal(signal.SIGALRM, handler)
        signal.setitimer(signal.ITIMER_REAL, *timer)


@pytest.mark.usefixtures("free_sigalrm")
def test_a_script_that_blocks_sigalrm_gets_the_thread_sampler() -> None:
    import signal

    s = Sampler(StackWalker(FunctionTable(), Markers()), 1000.0, lambda tid: ("0/0", 0), lambda items: None)
    assert s.main_tid is not None
    old = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
    try:
        s.window_started(s.main_tid)
        assert not s._armed and signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
        assert any("blocks SIGALRM" in n for n in s.notes)
        s.window_ended(s.main_tid)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        s.stop()


@pytest.mark.usefixtures("free_sigalrm")
def test_a_handler_the_script_installs_mid_compile_is_left_in_place() -> None:
    import signal

    s = Sampler(StackWalker(FunctionTable(), Markers()), 1000.0, lambda tid: ("0/0", 0), lambda items: None)
    assert s.main_tid is not None

    def mine(signum: int, frame: object) -> None:
        pass

    try:
        s.window_started(s.main_tid)
        assert s._armed
        signal.signal(signal.SIGALRM, mine)  # the script, while Dynamo compiles
        s.window_ended(s.main_tid)
        assert signal.getsignal(signal.SIGALRM) is mine
        assert any("took SIGALRM" in n for n in s.notes) and not s.use_signal
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        s.stop()


def test_guard_trees_are_measured_late_without_keeping_compiled_code_alive() -> None:
    from dynaprof.capture.torch_hooks import Recorder

    class GuardManager:
        root = None

        def __str__(self) -> str:
            return "TREE_GUARD_MANAGER:\n+- RootGuardManager"

    class Result:
        def __init__(self) -> None:
            self.guard_manager = GuardManager()

    out: list[dict[str, object]] = []
    rec = Recorder(out.append, 0, FunctionTable())
    kept, dropped = Result(), Result()
    watch = weakref.ref(dropped.guard_manager)
    for result in (kept, dropped):
        rec._end(rec._begin(user_fn.__code__, "0/0"), result, None)
    del dropped, result
    assert watch() is None  # dynaprof held no reference to it
    rec.flush_guards()
    printed = [r for r in out if r["t"] == "guards" and "code_text_lines" in r]
    assert len(printed) == 1 and printed[0]["code_text_lines"] == 2
    assert any(r["t"] == "warn" and "guard code sizes of 1 compile are unknown" in str(r["msg"]) for r in out)


def test_sampling_stops_before_dynaprofs_own_work_at_the_end_of_a_compile() -> None:
    """The window's end (which stops the sampler and cProfile) comes before dynaprof measures the
    guard tree and writes the compile_end record: that work is dynaprof's, not the compile's."""
    from dynaprof.capture.torch_hooks import Recorder

    events: list[str] = []

    class GuardManager:
        @property
        def root(self) -> None:
            events.append("guards measured")
            return None

    class Result:
        guard_manager = GuardManager()

    def emit(r: dict[str, object]) -> None:
        events.append(f"record {r['t']}")

    rec = Recorder(emit, 0, FunctionTable())
    rec.on_window_start = lambda tid: events.append("window start")
    rec.on_window_end = lambda tid: events.append("window end")
    outer = rec._begin(user_fn.__code__, "0/0")
    rec._end(outer, Result(), None)
    assert events.index("window end") < events.index("guards measured") < events.index("record compile_end")
    assert events.count("window end") == 1
    # nested windows (a compile inside a compile): only the outermost end stops sampling
    events.clear()
    a = rec._begin(user_fn.__code__, "1/0")
    b = rec._begin(user_fn.__code__, "2/0")
    rec._end(b, None, None)
    assert "window end" not in events
    rec._end(a, None, None)
    assert events.count("window end") == 1 and events.count("window start") == 1
