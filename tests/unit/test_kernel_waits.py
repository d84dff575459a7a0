"""Kernel compile time goes to the kernel being compiled: the wait on compile workers is split by
each kernel's measured build time (never given to the union of their causes), unmeasured time is
kept apart, and the builder hooks find which kernel a call builds."""

from __future__ import annotations

import types

import pytest

from dynaprof.capture import kernel_builds
from dynaprof.ingest.kernel_waits import UNKNOWN_CAUSE, KernelWait, split_waits, weights
from dynaprof.model.journal import KERNEL_WAIT_CAUSE
from dynaprof.model.session import CompiledFrame, FunctionRef, Stack


def _functions() -> list[FunctionRef]:
    return [
        FunctionRef("AsyncCompile._wait_futures", "/torch/_inductor/async_compile.py", 1, "python"),
        FunctionRef("Linear.weight via P", "/u.py", 3, "cause:parametrization"),
        FunctionRef("forward (u.py:9)", "/u.py", 9, "cause:user"),
        FunctionRef("kernel wait 1", "", 0, KERNEL_WAIT_CAUSE),
    ]


def _frame(key: str = "0/0") -> CompiledFrame:
    return CompiledFrame(key, key, key, 0, "forward", "/u.py", 9, 1, "MainThread", 0.0, 10.0)


def _wait_stack(samples: int, seconds: float, cause: int = 3) -> Stack:
    return Stack("0/0", 0, 1, [0], [], samples, seconds, [], cause)


def test_a_wait_is_split_by_each_kernel_s_measured_build_time() -> None:
    fns = _functions()
    frames = {"0/0": _frame()}
    wait = KernelWait("0/0", 3, 4.0, 0, [(1, 3.0), (2, 1.0)])
    other = Stack("0/0", 0, 1, [0], [], 5, 0.5, [], 2)
    out = split_waits([_wait_stack(100, 4.0), other], [wait], fns, frames)
    by_cause = {st.cause: st for st in out if st is not other}
    assert set(by_cause) == {1, 2}  # the parametrization's kernel and the user's, never their union
    assert by_cause[1].seconds == pytest.approx(3.0) and by_cause[2].seconds == pytest.approx(1.0)
    assert by_cause[1].samples + by_cause[2].samples == 100 and by_cause[1].samples == 75
    assert other in out  # stacks outside a wait are untouched
    assert frames["0/0"].kernel_wait_unmeasured_s == 0.0
    assert UNKNOWN_CAUSE not in fns  # not needed: nothing unmeasured


def test_a_wait_with_no_measured_kernel_stays_unknown_and_is_counted() -> None:
    fns = _functions()
    frames = {"0/0": _frame()}
    out = split_waits([_wait_stack(10, 2.0)], [KernelWait("0/0", 3, 2.0, 2, [])], fns, frames)
    (st,) = out
    assert fns[st.cause] == UNKNOWN_CAUSE and st.seconds == pytest.approx(2.0)
    assert frames["0/0"].kernel_wait_unmeasured_s == pytest.approx(2.0)


def test_a_partly_measured_wait_gives_only_the_measured_seconds_to_their_kernels() -> None:
    wait = KernelWait("0/0", 3, 4.0, 1, [(1, 1.0)])
    parts = dict(weights(wait, 9))
    assert parts == {1: pytest.approx(0.25), 9: pytest.approx(0.75)}  # 3 s waited for the unmeasured kernel
    # binaries already on disk: nothing was built, the wait loaded them
    assert dict(weights(KernelWait("0/0", 3, 0.2, 0, [(1, 0.0), (2, 0.0)]), 9)) == {1: 0.5, 2: 0.5}
    # builds overlapping in two workers can sum past the wait: the measured kernels then take it all
    assert dict(weights(KernelWait("0/0", 3, 2.0, 1, [(1, 2.0), (2, 2.0)]), 9)) == {1: 0.5, 2: 0.5}


def test_a_wait_without_its_record_is_left_alone() -> None:
    fns = _functions()
    st = _wait_stack(10, 1.0)
    assert split_waits([st], [KernelWait("0/1", 7, 1.0, 0, [(1, 1.0)])], fns, {}) == [st]


def test_the_assembler_splits_a_journal_s_wait() -> None:
    """A ``kernel_wait`` record, as capture writes it, splits its wait's samples in the session."""
    from dynaprof.model.journal import RECORD_TYPES
    from tests.helpers import journal_with_one_sample

    wait = {"t": "kernel_wait", "key": "0/0", "cause": 12, "seconds": 0.03, "unmeasured": 0,
            "shares": [[10, 2.0], [11, 1.0]]}
    assert set(wait) == RECORD_TYPES["kernel_wait"].__required_keys__
    _, causes = journal_with_one_sample([[10, "Linear.weight via P", "/w/tiny.py", 3, "cause:parametrization"],
                                         [11, "f (tiny.py:2)", "/w/tiny.py", 2, "cause:user"],
                                         [12, "kernel wait 1", "", 0, KERNEL_WAIT_CAUSE]], wait)
    assert causes == {"Linear.weight via P": pytest.approx(0.02), "f (tiny.py:2)": pytest.approx(0.01)}


def _caller(line: str, tmp_path: object) -> types.SimpleNamespace:
    """A generated module's frame at ``line`` (each its own file: linecache keeps what it read)."""
    import pathlib

    path = pathlib.Path(str(tmp_path)) / f"output_code_{abs(hash(line))}.py"
    path.write_text("import x\n" + line + "\n")
    return types.SimpleNamespace(f_code=types.SimpleNamespace(co_filename=str(path)), f_lineno=2)


def test_the_kernel_a_builder_call_defines(tmp_path: object) -> None:
    line = "cpp_fused__to_copy_0 = async_compile.cpp_pybinding(['float*', 'const float*'], r'''"
    assert kernel_builds.kernel_name("cpp_pybinding", ([], ""), {}, _caller(line, tmp_path)) == "cpp_fused__to_copy_0"
    assert kernel_builds.kernel_name("triton", ("triton_poi_fused_0", "src"), {}, None) == "triton_poi_fused_0"
    assert kernel_builds.kernel_name("cpp", ("src",), {}, _caller("f(async_compile.cpp('''", tmp_path)) is None
    assert kernel_builds.kernel_name("cpp", ("src",), {}, None) is None


def test_a_measured_kernel_of_unknown_cause_is_not_an_unmeasured_wait() -> None:
    """A kernel without provenance (a tensor subclass's nodes) whose build was timed: the wait goes
    to its cause, unknown, but nothing of it is counted as unmeasured."""
    from dynaprof.ingest.kernel_waits import unmeasured_share

    measured_unknown = KernelWait("0/0", 3, 0.5, 0, [(9, 0.8)])
    assert dict(weights(measured_unknown, 9)) == {9: 1.0} and unmeasured_share(measured_unknown) == 0.0
    assert unmeasured_share(KernelWait("0/0", 3, 0.5, 2, [])) == 1.0
    assert unmeasured_share(KernelWait("0/0", 3, 2.0, 1, [(1, 0.5)])) == 0.75
    assert unmeasured_share(KernelWait("0/0", 3, 0.2, 0, [(1, 0.0)])) == 0.0  # loaded, nothing built
