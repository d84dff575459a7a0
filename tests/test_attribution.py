"""Attribution rules on hand-built stacks: every second lands in exactly one category."""

from __future__ import annotations

import pytest

from dynaprof.analysis.attribution import attribute, classify, property_seconds
from dynaprof.model import CATEGORIES, PropertyTrace, Stack
from tests.factories import DYN, SP, FunctionTable, frame, make_session, seed_session


def _stack(
    t: FunctionTable, compiler: list[tuple[str, str]], traced: list[tuple[str, str, str]] = (), attempt: int = 0
) -> Stack:
    return Stack("0/0", attempt, 1, [t(n, f) for n, f in compiler], [t(n, f, 1, k) for n, f, k in traced], 1, 0.1)


CASES = [
    ([("f", DYN + "guards.py")], [], "guard_building"),
    (
        [
            ("compile_fx", SP + "torch/_inductor/compile_fx.py"),
            ("CppBuilder.build", SP + "torch/_inductor/cpp_builder.py"),
        ],
        [],
        "cpp_triton_compile",
    ),
    ([("codegen", SP + "torch/_inductor/scheduler.py")], [], "inductor_codegen"),
    ([("aot_module_simplified", SP + "torch/_functorch/aot_autograd.py")], [], "aot_autograd"),
    (
        [("run", DYN + "symbolic_convert.py"), ("_wrap", DYN + "variables/builder.py")],
        [("forward", "/u.py", "traced")],
        "fake_tensor",
    ),
    ([("run", DYN + "symbolic_convert.py")], [("forward", "/u.py", "traced")], "user_tracing"),
    ([("_find_and_load", "<frozen importlib._bootstrap>")], [], "other"),
    (
        [("run", DYN + "symbolic_convert.py")],
        [("forward", "/u.py", "traced"), ("Linear.weight", SP + "torch/nn/utils/parametrize.py", "property")],
        "parametrization",
    ),
    (
        [("run", DYN + "symbolic_convert.py")],
        [("forward", "/u.py", "traced"), ("get_parametrized", SP + "torch/nn/utils/parametrize.py", "traced")],
        "parametrization",
    ),
    # a property that is not a parametrization is ordinary user-code tracing
    (
        [("run", DYN + "symbolic_convert.py")],
        [("forward", "/u.py", "traced"), ("Foo.bar", "/u.py", "property")],
        "user_tracing",
    ),
]


@pytest.mark.parametrize("compiler, traced, expected", CASES)
def test_rules(compiler: list[tuple[str, str]], traced: list[tuple[str, str, str]], expected: str) -> None:
    t = FunctionTable()
    assert classify(_stack(t, compiler, traced), t.functions, final_attempt=0) == expected


def test_discarded_attempts_are_restarts_whatever_they_did() -> None:
    t = FunctionTable()
    st = _stack(t, [("f", DYN + "guards.py")], attempt=0)
    assert classify(st, t.functions, final_attempt=1) == "restarts"
    st = _stack(t, [("f", DYN + "guards.py")], attempt=1)
    assert classify(st, t.functions, final_attempt=1) == "guard_building"


def test_pyspy_stacks_match_parametrization_only_in_parametrized_frames() -> None:
    t = FunctionTable()
    st = _stack(
        t,
        [
            ("UserDefinedObjectVariable.resolve_data_descriptor", DYN + "variables/user_defined.py"),
            ("PropertyVariable.tp_descr_get_impl", DYN + "variables/functions.py"),
        ],
    )
    assert classify(st, t.functions, 0, parametrized_frame=True) == "parametrization"
    # Dynamo's variable trackers are tracing work (the deepest subsystem frame names the phase)
    assert classify(st, t.functions, 0, parametrized_frame=False) == "user_tracing"


def test_totals_add_up_and_each_category_is_present() -> None:
    s = seed_session()
    run, per_frame = attribute(s)
    assert set(run) == set(CATEGORIES)
    assert sum(run.values()) == pytest.approx(s.samples.seconds)  # type: ignore[union-attr]
    assert per_frame["0/0"] == run
    assert max(run, key=run.__getitem__) == "parametrization"


def test_restart_time_is_attributed_per_frame() -> None:
    t = FunctionTable()
    f = frame("0/0", restarts=1)
    stacks = [
        _stack(t, [("run", DYN + "symbolic_convert.py")], [("f", "/u.py", "traced")], attempt=0),
        _stack(t, [("run", DYN + "symbolic_convert.py")], [("f", "/u.py", "traced")], attempt=1),
    ]
    s = make_session([f], stacks, t.functions)
    assert s.attribution["restarts"] == pytest.approx(0.1)
    assert s.frames[0].attribution["user_tracing"] == pytest.approx(0.1)


def test_property_seconds_breaks_parametrization_down() -> None:
    s = seed_session()
    secs = property_seconds(s)
    assert set(secs) == {"Linear.weight", "Linear.bias"}
    assert secs["Linear.weight"] == pytest.approx(0.45)
    assert isinstance(s.frames[0].properties[0], PropertyTrace)


def test_stack_categories_agrees_with_classify_on_random_stacks() -> None:
    """The batch path (each function's rule matches worked out once) gives classify's answer."""
    import random

    from dynaprof.analysis.attribution import final_attempts, stack_categories
    from dynaprof.model import FunctionRef

    rng = random.Random(7)
    files = [
        DYN + "guards.py", SP + "torch/_inductor/codecache.py", SP + "torch/_inductor/scheduler.py",
        SP + "torch/_functorch/aot_autograd.py", SP + "torch/_subclasses/fake_tensor.py",
        DYN + "symbolic_convert.py", DYN + "variables/user_defined.py", DYN + "variables/functions.py",
        SP + "torch/nn/utils/parametrize.py", "/u.py", "<frozen importlib._bootstrap>",
        "C:\\venv\\Lib\\site-packages\\torch\\_dynamo\\guards.py",
    ]
    names = ["f", "resolve_data_descriptor", "tp_descr_get_impl", "get_parametrized", "Linear.weight"]
    kinds = ["python", "traced", "property", "native"]
    funcs = [FunctionRef(rng.choice(names), rng.choice(files), i, rng.choice(kinds)) for i in range(60)]
    stacks = [
        Stack(
            rng.choice(["0/0", "1/0", None]),
            rng.choice([-1, 0, 1, 2]),
            1,
            [rng.randrange(60) for _ in range(rng.randint(0, 6))],
            [rng.randrange(60) for _ in range(rng.choice([0, 0, 1, 3]))],
            1,
            0.01,
        )
        for _ in range(3000)
    ]
    s = make_session(
        frames=[
            frame("0/0", restarts=2, properties=[PropertyTrace("L.weight", "L", "w", "/p.py", 1, True, 2, 1, 0.1)]),
            frame("1/0", restarts=0),
        ],
        functions=funcs,
        stacks=stacks,
    )
    finals = final_attempts(s)
    param = {"0/0"}
    expected = [
        classify(st, funcs, finals.get(st.frame) if st.frame is not None else None, st.frame in param) for st in stacks
    ]
    assert stack_categories(s) == expected
    assert set(expected) == set(CATEGORIES)
