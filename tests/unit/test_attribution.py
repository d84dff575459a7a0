"""The one breakdown: every sampled second lands in one phase group, and ``attribution`` is exactly
the cause x phase matrix summed over each group's phases (the table's column totals)."""

from __future__ import annotations

import random

import pytest

from dynaprof.analysis.attribution import group_seconds, stack_categories, stack_group
from dynaprof.analysis.causes import Tables, session_tables
from dynaprof.model import CATEGORIES, FunctionRef, PropertyTrace, Stack
from dynaprof.model.session import (
    CATEGORY_LABELS,
    CAUSE_PARAMETRIZATION,
    CAUSE_WHOLE_GRAPH,
    GROUP_OF,
    PHASE_GROUPS,
    PHASE_LABELS,
    PHASES,
)
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
        "kernel_compile",
    ),
    ([("codegen", SP + "torch/_inductor/scheduler.py")], [], "inductor"),
    ([("aot_module_simplified", SP + "torch/_functorch/aot_autograd.py")], [], "aot_autograd"),
    (
        [("run", DYN + "symbolic_convert.py"), ("_wrap", DYN + "variables/builder.py")],
        [("forward", "/u.py", "traced")],
        "fake_tensor",
    ),
    ([("run", DYN + "symbolic_convert.py")], [("forward", "/u.py", "traced")], "dynamo_tracing"),
    ([("_find_and_load", "<frozen importlib._bootstrap>")], [], "other"),
    # tracing a parametrization's @property is Dynamo tracing: parametrization is its cause, not a phase
    (
        [("run", DYN + "symbolic_convert.py")],
        [("forward", "/u.py", "traced"), ("Linear.weight", SP + "torch/nn/utils/parametrize.py", "property")],
        "dynamo_tracing",
    ),
]


@pytest.mark.parametrize("compiler, traced, expected", CASES)
def test_each_stack_has_one_phase_group(compiler: list[tuple[str, str]], traced: list[tuple[str, str, str]],
                                        expected: str) -> None:
    t = FunctionTable()
    assert stack_group(_stack(t, compiler, traced), Tables(t.functions)) == expected


def test_labels_stand_for_one_number() -> None:
    """A group of one phase has the phase's key and label; a group of several has a label no phase
    has, so no label a reader sees is used for two different sums."""
    assert len(set(CATEGORY_LABELS.values())) == len(CATEGORY_LABELS)
    assert sorted(p for g in PHASE_GROUPS for p in g.phases) == sorted(PHASES)
    for g in PHASE_GROUPS:
        if len(g.phases) == 1:
            assert (g.key, g.label) == (g.phases[0], PHASE_LABELS[g.phases[0]])
        else:
            assert g.label not in PHASE_LABELS.values()
            assert g.key not in PHASES


def _matrix_group_sums(session_axes: object) -> dict[str, float]:
    out = dict.fromkeys(CATEGORIES, 0.0)
    for phase, row in session_axes.matrix.items():  # type: ignore[attr-defined]
        out[GROUP_OF[phase]] += sum(row.values())
    return out


def test_attribution_is_the_phase_axis_of_the_seed() -> None:
    s = seed_session()
    assert s.axes is not None
    assert set(s.attribution) == set(CATEGORIES)
    assert s.attribution == pytest.approx(_matrix_group_sums(s.axes))
    assert sum(s.attribution.values()) == pytest.approx(s.samples.seconds)  # type: ignore[union-attr]
    assert "parametrization" not in s.attribution and "restarts" not in s.attribution
    assert s.axes.causes[CAUSE_PARAMETRIZATION] > 0  # the seed's parametrization is a cause


def test_restarts_are_waste_in_their_phase() -> None:
    t = FunctionTable()
    f = frame("0/0", restarts=1)
    stacks = [
        _stack(t, [("run", DYN + "symbolic_convert.py")], [("f", "/u.py", "traced")], attempt=0),
        _stack(t, [("run", DYN + "symbolic_convert.py")], [("f", "/u.py", "traced")], attempt=1),
    ]
    s = make_session([f], stacks, t.functions)
    assert s.attribution["dynamo_tracing"] == pytest.approx(0.2)
    assert s.axes is not None and s.axes.restart_waste.seconds == pytest.approx(0.1)
    assert s.frames[0].attribution["dynamo_tracing"] == pytest.approx(0.2)


def test_pyspy_stacks_are_parametrization_only_in_parametrized_frames() -> None:
    """py-spy cannot read the traced stack: the compiler resolving a property in a frame where
    capture measured parametrized properties is the parametrization's; elsewhere it is not."""
    t = FunctionTable()
    compiler = [
        ("UserDefinedObjectVariable.resolve_data_descriptor", DYN + "variables/user_defined.py"),
        ("PropertyVariable.tp_descr_get_impl", DYN + "variables/functions.py"),
    ]
    prop = PropertyTrace("Linear.weight", "Linear", "weight", "/p.py", 1, True, 2, 1, 0.1)
    param = make_session([frame("0/0", properties=[prop])], [_stack(t, compiler)], t.functions)
    plain = make_session([frame("0/0")], [_stack(t, compiler)], t.functions)
    assert param.axes is not None and plain.axes is not None
    assert param.axes.causes == {CAUSE_PARAMETRIZATION: pytest.approx(0.1)}
    assert plain.axes.causes == {CAUSE_WHOLE_GRAPH: pytest.approx(0.1)}
    assert param.attribution["dynamo_tracing"] == plain.attribution["dynamo_tracing"] == pytest.approx(0.1)


def test_attribution_equals_the_matrix_on_random_stacks() -> None:
    """Whatever the stacks, per run and per frame, each group's seconds are its phases' seconds."""
    rng = random.Random(7)
    files = [
        DYN + "guards.py", SP + "torch/_inductor/codecache.py", SP + "torch/_inductor/scheduler.py",
        SP + "torch/_functorch/aot_autograd.py", SP + "torch/_subclasses/fake_tensor.py",
        DYN + "symbolic_convert.py", DYN + "variables/user_defined.py", DYN + "variables/functions.py",
        SP + "torch/nn/utils/parametrize.py", "/u.py", "<frozen importlib._bootstrap>",
        SP + "torch/_inductor/cpp_builder.py", SP + "torch/_inductor/cpu_vec_isa.py",
        "C:\\venv\\Lib\\site-packages\\torch\\_dynamo\\guards.py",
    ]
    names = ["f", "resolve_data_descriptor", "tp_descr_get_impl", "get_parametrized", "Linear.weight", "pick_vec_isa"]
    kinds = ["python", "traced", "property", "native"]
    funcs = [FunctionRef(rng.choice(names), rng.choice(files), i, rng.choice(kinds)) for i in range(60)]
    stacks = [
        Stack(rng.choice(["0/0", "1/0", None]), rng.choice([-1, 0, 1, 2]), 1,
              [rng.randrange(60) for _ in range(rng.randint(0, 6))],
              [rng.randrange(60) for _ in range(rng.choice([0, 0, 1, 3]))], 1, 0.01)
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
    assert s.axes is not None
    assert s.attribution == pytest.approx(_matrix_group_sums(s.axes))
    assert s.attribution == group_seconds(s.axes)
    for f in s.frames:
        assert f.axes is not None and f.attribution == pytest.approx(_matrix_group_sums(f.axes))
    # the pictures' colour: the parametrization cause, else the phase group
    t = session_tables(s)
    colours = stack_categories(s)
    from dynaprof.analysis.causes import stack_causes, stack_phases
    expected = ["parametrization" if c == CAUSE_PARAMETRIZATION else stack_group(st, t)
                for st, (c, _) in zip(stacks, stack_causes(s, t, stack_phases(s)), strict=True)]
    assert colours == expected and "parametrization" in colours and len(set(colours)) > 4
