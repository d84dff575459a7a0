"""The two axes of a sampled second: phase (what the compiler did) and cause (for which user code)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dynaprof.analysis.causes import frame_phase, span_phase, stack_phase, tables
from dynaprof.analysis.findings import findings, hottest
from dynaprof.capture import node_causes
from dynaprof.model import FunctionRef, Stack, load_session, save_session
from dynaprof.model.session import CAUSE_PARAMETRIZATION, CAUSE_TOOLCHAIN, CAUSE_UNKNOWN, CAUSE_WHOLE_GRAPH
from tests.factories import DYN, SP, FunctionTable, frame, make_session

IND = SP + "torch/_inductor/"


def _st(t: FunctionTable, compiler: list[tuple[str, str]], spans: list[str] = (), cause: int = -1,  # type: ignore[assignment]
        traced: list[int] = (), attempt: int = 0, secs: float = 1.0) -> Stack:  # type: ignore[assignment]
    return Stack("0/0", attempt, 1, [t(n, f, 1) for n, f in compiler], list(traced), 1, secs,
                 [t(s, "", 0, "span") for s in spans], cause)


def test_innermost_span_that_names_a_phase_wins_over_frames() -> None:
    t = FunctionTable()
    # AOT autograd's span encloses Inductor's: the innermost named span is the phase, even though
    # every frame of the stack is under torch/_functorch and torch/_inductor
    st = _st(t, [("aot", SP + "torch/_functorch/aot_autograd.py"), ("codegen", IND + "scheduler.py")],
             ["entire_frame_compile", "backend_compile", "create_aot_dispatcher_function", "inductor_compile",
              "Scheduler.codegen", "compile_file"])
    assert stack_phase(st, tables(t.functions)) == "kernel_compile"
    # a container span (no phase of its own) defers to the frames: the deepest subsystem frame
    st = _st(t, [("aot", SP + "torch/_functorch/aot_autograd.py"), ("hash", IND + "codecache.py"),
                 ("load", "<frozen importlib._bootstrap>")], ["backend_compile"])
    assert stack_phase(st, tables(t.functions)) == "kernel_compile"


def test_without_spans_the_deepest_subsystem_frame_names_the_phase() -> None:
    t = FunctionTable()
    st = _st(t, [("run", DYN + "symbolic_convert.py"), ("wrap", DYN + "variables/builder.py")])
    assert stack_phase(st, tables(t.functions)) == "fake_tensor"
    # fake tensors inside AOT autograd are AOT autograd's work
    st = _st(t, [("aot", SP + "torch/_functorch/partitioners.py"), ("prop", SP + "torch/_subclasses/fake_tensor.py")])
    assert stack_phase(st, tables(t.functions)) == "aot_partition"
    assert stack_phase(_st(t, [("x", "/u.py")]), tables(t.functions)) == "other"


def test_span_and_frame_tables() -> None:
    assert span_phase("compile_attempt_3") == "dynamo_tracing"
    assert span_phase("pass.joint_graph_passes.pass_pattern_0") == "graph_passes"
    assert span_phase("inductor_compile") is None
    assert frame_phase(FunctionRef("f", IND + "codegen/cpp.py", 1, "python")) == "codegen"
    assert frame_phase(FunctionRef("f", DYN + "guards.py", 1, "python")) == "guard_building"


def _axes_session(t: FunctionTable, stacks: list[Stack], restarts: int = 0):  # type: ignore[no-untyped-def]
    return make_session([frame("0/0", restarts=restarts, compile_time_s=sum(s.seconds for s in stacks))],
                        stacks, t.functions)


def test_node_causes_follow_the_work_through_inductor() -> None:
    t = FunctionTable()
    param = t("Linear.weight via Parametrization", "/u.py", 31, "cause:parametrization")
    user = t("forward (u.py:26)", "/u.py", 26, "cause:user")
    unknown = t(CAUSE_UNKNOWN, "", 0, "cause:unknown")
    lowering = [("run_node", IND + "graph.py")]
    stacks = [
        _st(t, lowering, ["GraphLowering.run"], param, secs=2.0),
        _st(t, [("compile", IND + "codecache.py")], ["compile_file"], param, secs=5.0),
        _st(t, lowering, ["GraphLowering.run"], user, secs=1.0),
        _st(t, lowering, ["GraphLowering.run"], unknown, secs=0.5),
        _st(t, [("fuse", IND + "scheduler.py")], ["Scheduler.__init__"], secs=0.5),
    ]
    s = _axes_session(t, stacks)
    ax = s.axes
    assert ax is not None
    assert ax.causes == {CAUSE_PARAMETRIZATION: 7.0, "forward (u.py:26)": 1.0, CAUSE_UNKNOWN: 0.5,
                         CAUSE_WHOLE_GRAPH: 0.5}
    assert ax.matrix["kernel_compile"] == {CAUSE_PARAMETRIZATION: 5.0}
    assert ax.matrix["lowering"][CAUSE_PARAMETRIZATION] == 2.0
    assert ax.parametrizations == {"Linear.weight via Parametrization": 7.0}
    assert s.attribution["kernel_compile"] == 5.0 and s.attribution["inductor"] == 4.0
    assert sum(sum(row.values()) for row in ax.matrix.values()) == pytest.approx(9.0)
    verdict = hottest(s)
    assert verdict.startswith("parametrization (via Parametrization) cost 7.00 s of 9.00 s compile (78%)")
    assert "5.00 s C++/Triton kernel compile" in verdict and "2.00 s Inductor lowering" in verdict


def test_traced_parametrization_is_named_by_property_and_class() -> None:
    t = FunctionTable()
    fwd = t("Module.forward", "/work/u.py", 11, "traced")
    prop = t("Linear.weight", SP + "torch/nn/utils/parametrize.py", 419, "property")
    getp = t("get_parametrized", SP + "torch/nn/utils/parametrize.py", 419, "traced")
    plist = t("ModuleList.__getitem__", SP + "torch/nn/modules/container.py", 300, "traced")
    pfwd = t("_WeightNorm.forward", SP + "torch/nn/utils/parametrizations.py", 30, "traced")
    run = [("run", DYN + "symbolic_convert.py")]
    stacks = [
        _st(t, run, ["bytecode_tracing"], traced=[fwd, prop, getp, plist, pfwd], secs=3.0),
        _st(t, run, ["bytecode_tracing"], traced=[fwd, prop, getp], secs=1.0),  # before the class is reached
        _st(t, run, ["bytecode_tracing"], traced=[fwd], secs=2.0),
    ]
    ax = _axes_session(t, stacks).axes
    assert ax is not None
    assert ax.parametrizations == {"Linear.weight via _WeightNorm": 4.0}
    assert ax.causes == {CAUSE_PARAMETRIZATION: 4.0, "Module.forward (u.py:11)": 2.0}


def test_restart_waste_is_a_flag_counted_on_both_axes() -> None:
    t = FunctionTable()
    fwd = t("helper", "/work/u.py", 5, "traced")
    run = [("run", DYN + "symbolic_convert.py")]
    stacks = [_st(t, run, ["bytecode_tracing"], traced=[fwd], attempt=0, secs=3.0),
              _st(t, run, ["bytecode_tracing"], traced=[fwd], attempt=1, secs=1.0)]
    s = _axes_session(t, stacks, restarts=1)
    ax = s.axes
    assert ax is not None
    assert ax.causes == {"helper (u.py:5)": 4.0}  # the wasted attempt still counts for its cause
    assert ax.restart_waste.seconds == 3.0 and ax.restart_waste.by_cause == {"helper (u.py:5)": 3.0}
    # the thrown-away attempts are what a user can save: the restart leads, named by its cause's line
    assert hottest(s).startswith("helper (u.py:5): 1 restart in 1 frame threw away 3.00 s")
    assert "3.00 s of it in attempts that restarts threw away" in next(
        f.text for f in findings(s) if f.key == "cause:helper (u.py:5)")


def test_axes_live_inside_attribution_in_session_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = FunctionTable()
    param = t("Linear.weight via Parametrization", "/u.py", 31, "cause:parametrization")
    s = _axes_session(t, [_st(t, [("run_node", IND + "graph.py")], ["GraphLowering.run"], param, secs=2.0)])
    path = save_session(s, tmp_path)
    import json

    data = json.loads(path.read_text())
    assert data["schema_version"] == 3
    assert data["attribution"]["causes"] == {"parametrization": 2.0}
    assert data["attribution"]["inductor"] == 2.0
    assert data["frames"][0]["attribution"]["matrix"] == {"lowering": {"parametrization": 2.0}}
    assert "axes" not in data
    again = load_session(tmp_path)
    assert again.axes == s.axes and again.frames[0].axes == s.frames[0].axes
    assert again.samples is not None and again.samples.stacks[0].cause == param


def _node(stack_trace: str, modules: dict[str, tuple[str, object]] | None = None) -> SimpleNamespace:
    meta: dict[str, object] = {"stack_trace": stack_trace}
    if modules is not None:
        meta["nn_module_stack"] = modules
    return SimpleNamespace(meta=meta)


class ParametrizedLinear:
    pass


class Parametrization:
    pass


PARAM_TRACE = (
    '  File "/work/model.py", line 26, in forward\n    return self.seq(x)\n'
    '  File "/venv/lib/python3.11/site-packages/torch/nn/utils/parametrize.py", line 440, in get_parametrized\n'
    '  File "/work/model.py", line 31, in forward\n    return x.half()\n'
)


def test_provenance_names_a_parametrized_node_by_property_and_class() -> None:
    node = _node(PARAM_TRACE, {"1": ("L['self'].seq.0", ParametrizedLinear),
                               "2": ("L['self'].seq.0.parametrizations.weight", object),
                               "3": ("L['self'].seq.0.parametrizations.weight.0", Parametrization)})
    assert node_causes.node_cause(node) == ("Linear.weight via Parametrization", "/work/model.py", 31,
                                           node_causes.CAUSE_PARAMETRIZATION)
    # module classes as strings (older torch), or no module stack at all
    node = _node(PARAM_TRACE, {"1": ("L['self'].seq.0", "torch.nn.utils.parametrize.ParametrizedConv1d"),
                               "3": ("L['self'].seq.0.parametrizations.weight.0", "torch.nn.utils._WeightNorm")})
    assert node_causes.node_cause(node)[0] == "Conv1d.weight via _WeightNorm"  # type: ignore[index]
    assert node_causes.node_cause(_node(PARAM_TRACE))[0] == "parametrization at model.py:31"  # type: ignore[index]


def test_provenance_of_user_code_and_of_nodes_without_any() -> None:
    node = _node('  File "/work/model.py", line 26, in forward\n    return self.seq(x)\n'
                 '  File "/venv/site-packages/torch/nn/modules/linear.py", line 134, in forward\n')
    assert node_causes.node_cause(node) == ("forward (model.py:26)", "/work/model.py", 26, node_causes.CAUSE_USER)
    assert node_causes.node_cause(_node("")) is None
    assert node_causes.node_cause(SimpleNamespace()) is None  # not an FX node at all


def test_a_kernel_fused_from_several_causes_is_a_named_mix() -> None:
    a = ("Linear.weight via P", "/u.py", 1, node_causes.CAUSE_PARAMETRIZATION)
    b = ("Linear.bias via P", "/u.py", 2, node_causes.CAUSE_PARAMETRIZATION)
    u = ("forward (u.py:26)", "/u.py", 26, node_causes.CAUSE_USER)
    assert node_causes.combine([a, a]) == a
    both = node_causes.combine([a, b])
    assert both[3] == node_causes.CAUSE_PARAMETRIZATION and both[0] == "Linear.bias, Linear.weight via P"
    assert node_causes.combine([]) == node_causes.UNKNOWN
    assert node_causes.combine([u, node_causes.UNKNOWN]) == u  # a node without provenance adds nothing


def test_a_kernel_is_the_parametrization_s_only_when_it_would_not_exist_without_it() -> None:
    """A kernel made only of a parametrization's nodes is the parametrization's; one that fuses them
    into user code's would be built without the parametrization too: it is the user code's."""
    a = ("Linear.weight via P", "/u.py", 1, node_causes.CAUSE_PARAMETRIZATION)
    b = ("Linear.bias via P", "/u.py", 2, node_causes.CAUSE_PARAMETRIZATION)
    u = ("forward (u.py:26)", "/u.py", 26, node_causes.CAUSE_USER)
    v = ("helper (u.py:40)", "/u.py", 40, node_causes.CAUSE_USER)
    assert node_causes.combine([a, b])[3] == node_causes.CAUSE_PARAMETRIZATION
    assert node_causes.combine([a, u]) == u
    assert node_causes.combine([a, u, v, v]) == v  # the line with the most nodes


def test_work_for_several_user_lines_goes_to_the_one_owning_most_nodes_never_a_list() -> None:
    """A cause is one place a user can act on (issue: the verdict never leads with "mixed:")."""
    users = [(f"f{i} (u.py:{i})", "/u.py", i, node_causes.CAUSE_USER) for i in range(1, 6)]
    assert node_causes.combine(users) == users[0]  # a tie: the first in file order
    assert node_causes.combine([*users, users[3], users[3]]) == users[3]
    assert all(node_causes.combine(users[i:] + users[:i])[3] == node_causes.CAUSE_USER for i in range(5))


def test_combining_combined_causes_never_nests_a_label() -> None:
    """A wait on several kernels combines kernels' causes, which are combinations themselves."""
    from dynaprof.capture.stacks import FunctionTable as CaptureTable
    from dynaprof.capture.torch_hooks import Recorder

    rec = Recorder(lambda r: None, 0, CaptureTable())
    users = [rec._cause_id((f"f{i} (u.py:{i})", "/u.py", i, node_causes.CAUSE_USER)) for i in range(1, 5)]
    k1 = rec._combined_cause_id(users[:2])
    k2 = rec._combined_cause_id(users[2:])
    both = rec._cause_keys[rec._combined_cause_id([k1, k2])]
    assert both[0] == "f1 (u.py:1)" and k1 == users[0] and k2 == users[2]
    # a single node's cause stays itself: the kernel that took its name does not make it a combination
    assert rec._combined_cause_id([users[1]]) == users[1]
    params = [rec._cause_id((f"L{i}.weight via P", "/u.py", i, node_causes.CAUSE_PARAMETRIZATION)) for i in range(3)]
    p1 = rec._combined_cause_id(params[:2])
    label = rec._cause_keys[rec._combined_cause_id([p1, params[2]])][0]
    assert label == "L0.weight, L1.weight, L2.weight via P"


def test_backend_work_without_a_node_is_whole_graph_even_inside_dynamo_s_loop() -> None:
    """Dynamo calls the backend from inside its translator loop: the traced stack is still there."""
    t = FunctionTable()
    fwd = t("Module.forward", "/work/u.py", 11, "traced")
    st = _st(t, [("run", DYN + "symbolic_convert.py"), ("passes", IND + "fx_passes/joint_graph.py")],
             ["_recursive_joint_graph_passes"], traced=[fwd])
    ax = _axes_session(t, [st]).axes
    assert ax is not None and ax.causes == {CAUSE_WHOLE_GRAPH: 1.0}


def test_registering_a_parametrization_while_dynamo_traces_is_a_parametrization_cause() -> None:
    t = FunctionTable()
    fwd = t("ParamWrapper.forward", "/venv/site-packages/peft/tuners/lora/layer.py", 2698, "traced")
    reg = t("register_parametrization", SP + "torch/nn/utils/parametrize.py", 600, "traced")
    st = _st(t, [("run", DYN + "symbolic_convert.py")], ["bytecode_tracing"], traced=[fwd, reg])
    ax = _axes_session(t, [st]).axes
    assert ax is not None and ax.causes == {CAUSE_PARAMETRIZATION: 1.0}
    assert ax.parametrizations == {"register_parametrization inside the compiled code": 1.0}
    # library code is user code: a traced function in site-packages (not torch) names the cause
    ax = _axes_session(t, [_st(t, [("run", DYN + "symbolic_convert.py")], traced=[fwd])]).axes
    assert ax is not None and ax.causes == {"ParamWrapper.forward (layer.py:2698)": 1.0}


def test_parametrize_code_running_for_real_during_a_compile_is_a_parametrization_cause() -> None:
    """torch 2.4 does not trace the property: it deep-copies each parametrized module into fake
    tensors, which runs parametrize.py's own code under the compiler."""
    t = FunctionTable()
    st = _st(t, [("run", DYN + "symbolic_convert.py"), ("deepcopy_to_fake_tensor", DYN + "utils.py"),
                 ("default_deepcopy", SP + "torch/nn/utils/parametrize.py")],
             traced=[t("Module.forward", "/work/u.py", 11, "traced")])
    ax = _axes_session(t, [st]).axes
    assert ax is not None and ax.causes == {CAUSE_PARAMETRIZATION: 1.0}
    assert ax.parametrizations == {"parametrized modules (default_deepcopy while compiling)": 1.0}


def test_a_parametrized_module_call_on_torch_24_is_the_parametrizations() -> None:
    """Torch 2.4 traces no property: capture puts each parametrized module's call on the traced stack
    (``PARAMETRIZED_CALL``), and what Dynamo does under it (inlining ``Module._call_impl`` for the
    module's own class) is the parametrization's, not the user code that calls the module."""
    from dynaprof.model.journal import PARAMETRIZED_CALL

    t = FunctionTable()
    user = t("Module.forward", "/work/u.py", 11, "traced")
    call = t("Linear", SP + "torch/nn/utils/parametrize.py", 0, PARAMETRIZED_CALL)
    impl = t("Module._call_impl", SP + "torch/nn/modules/module.py", 1555, "traced")
    inlined = _st(t, [("run", DYN + "symbolic_convert.py"),
                      ("cleaned_instructions", DYN + "bytecode_transformation.py")], traced=[user, call, impl])
    plain = _st(t, [("run", DYN + "symbolic_convert.py")], traced=[user, impl])
    ax = _axes_session(t, [inlined, plain]).axes
    assert ax is not None and ax.causes == {CAUSE_PARAMETRIZATION: 1.0, "Module.forward (u.py:11)": 1.0}
    assert ax.parametrizations == {"parametrized Linear calls (Module._call_impl inlined per class)": 1.0}


def test_the_deepest_parametrize_frame_names_the_cause_and_toolchain_frames_count_anywhere() -> None:
    """``Tables`` keeps the per-function facts as index sets too (one check per stack): the stack's
    deepest parametrize.py frame still names the cause, and a toolchain frame at any depth (not
    only the innermost) still makes the stack toolchain setup."""
    from dynaprof.analysis.causes import stack_cause

    t = FunctionTable()
    pz = SP + "torch/nn/utils/parametrize.py"
    st = _st(t, [("run", DYN + "symbolic_convert.py"), ("register_parametrization", pz),
                 ("deepcopy_to_fake_tensor", DYN + "utils.py"), ("default_deepcopy", pz), ("clone", DYN + "utils.py")])
    tb = tables(t.functions)
    assert tb.parametrize_ids == {i for i, x in enumerate(tb.parametrize) if x} == {st.compiler[1], st.compiler[3]}
    assert stack_cause(st, tb, "dynamo_tracing") == (CAUSE_PARAMETRIZATION,
                                                     "parametrized modules (default_deepcopy while compiling)")
    plain = _st(t, [("run", DYN + "symbolic_convert.py"), ("clone", DYN + "utils.py")])
    assert stack_cause(plain, tables(t.functions), "dynamo_tracing") == (CAUSE_WHOLE_GRAPH, CAUSE_WHOLE_GRAPH)
    setup = _st(t, [("compile", SP + "torch/_inductor/codecache.py"), ("_precompile_header",
                                                                       SP + "torch/_inductor/codecache.py"),
                    ("run", SP + "torch/_inductor/graph.py"), ("clone", DYN + "utils.py")])
    tb = tables(t.functions)
    assert tb.toolchain_ids == {i for i, x in enumerate(tb.toolchain) if x} == {setup.compiler[1]}
    assert stack_phase(setup, tb) == "toolchain_setup"
    assert stack_phase(plain, tb) != "toolchain_setup"


def test_nodes_without_provenance_are_unknown_with_their_seconds_and_said() -> None:
    from dynaprof.analysis.findings import findings

    t = FunctionTable()
    unknown = t(CAUSE_UNKNOWN, "", 0, "cause:unknown")
    param = t("Linear.weight via P", "/u.py", 3, "cause:parametrization")
    stacks = [_st(t, [("run_node", IND + "graph.py")], ["GraphLowering.run"], unknown, secs=2.0),
              _st(t, [("run_node", IND + "graph.py")], ["GraphLowering.run"], param, secs=8.0)]
    s = _axes_session(t, stacks)
    assert s.axes is not None and s.axes.causes[CAUSE_UNKNOWN] == 2.0
    said = [f.text for f in findings(s) if f.key == "no_provenance"]
    assert said and said[0].startswith("2.00 s (20% of compile) went to FX nodes without provenance")


def test_a_render_works_out_each_stacks_phase_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Categories, the cause x phase axes and the user-code view all start from one list of
    phases (``Derived.phases``): a render computes each stack's phase once, not once per view."""
    from dynaprof.analysis import causes
    from dynaprof.analysis.attribution import apply_attribution
    from dynaprof.analysis.derived import Derived
    from tests.factories import inductor_session

    s = inductor_session()
    assert s.samples is not None and s.samples.stacks
    calls = 0
    real = causes.stack_phase

    def counting(st: Stack, t: object) -> str:
        nonlocal calls
        calls += 1
        return real(st, t)  # type: ignore[arg-type]

    monkeypatch.setattr(causes, "stack_phase", counting)
    d = Derived(s)
    apply_attribution(s, d.phases, d.causes)
    assert d.user_view.phases == d.phases
    assert calls == len(s.samples.stacks)


def test_toolchain_setup_goes_to_the_only_cause_that_built_kernels_else_is_shared() -> None:
    """The first C++ kernel pays the one-time setup; it is that cause's only when no other cause's
    kernel was built (a plain model would then pay nothing), else any kernel would have paid it."""
    from dynaprof.analysis.causes import axes

    t = FunctionTable()
    build = t("CppBuilder.build", SP + "torch/_inductor/cpp_builder.py", 1500)
    isa = t("VecISA.check_build", SP + "torch/_inductor/cpu_vec_isa.py", 164)
    c_param = t("Linear.weight via P", "/w/m.py", 8, "cause:parametrization")
    c_user = t("forward (m.py:26)", "/w/m.py", 26, "cause:user")
    setup = Stack("0/0", 0, 1, [build, isa], [], 300, 3.0, [], c_param)
    param_kernel = Stack("0/0", 0, 1, [build], [], 100, 1.0, [], c_param)
    user_kernel = Stack("0/0", 0, 1, [build], [], 50, 0.5, [], c_user)
    only_param = make_session([frame("0/0", compile_time_s=4.0)], [setup, param_kernel], t.functions)
    run, _ = axes(only_param)
    assert run is not None and run.matrix["toolchain_setup"] == {CAUSE_PARAMETRIZATION: 3.0}
    both = make_session([frame("0/0", compile_time_s=4.5)], [setup, param_kernel, user_kernel], t.functions)
    run, _ = axes(both)
    assert run is not None and run.matrix["toolchain_setup"] == {CAUSE_TOOLCHAIN: 3.0}  # not graph work
    assert run.matrix["kernel_compile"] == {CAUSE_PARAMETRIZATION: 1.0, "forward (m.py:26)": 0.5}


def test_the_collectors_time_is_its_own_phase_and_cause_wherever_it_was_sampled() -> None:
    """A stack ending in ``GC_FUNCTION`` is the garbage collector's, on both axes, even under a
    parametrized property (the collection's cost grows with everything alive, not with the code
    whose allocation started it); a large share is a finding with the gc.freeze() remedy."""
    from dynaprof.analysis.causes import axes
    from dynaprof.analysis.findings import findings
    from dynaprof.analysis.remedies import REMEDY_GC_FREEZE
    from dynaprof.model.journal import GC_FUNCTION
    from dynaprof.model.session import CAUSE_COLLECTOR

    t = FunctionTable()
    tracing = t("InstructionTranslator.run", DYN + "symbolic_convert.py", 1)
    collector = t(*GC_FUNCTION)
    prop = t("Linear.weight", SP + "torch/nn/utils/parametrize.py", 419, "property")
    traced = Stack("0/0", 0, 1, [tracing], [prop], 10, 0.6, [], -1)
    collected = Stack("0/0", 0, 1, [tracing, collector], [prop], 0, 0.3, [], -1)
    s = make_session([frame("0/0", compile_time_s=1.0)], [traced, collected], t.functions)
    assert stack_phase(collected, tables(t.functions)) == "garbage_collection"
    run, _ = axes(s)
    assert run is not None and run.matrix["garbage_collection"] == {CAUSE_COLLECTOR: 0.3}
    assert run.causes[CAUSE_PARAMETRIZATION] == 0.6
    s.axes = run
    got = [f for f in findings(s) if f.key == "collector"]
    assert len(got) == 1 and got[0].remedy == REMEDY_GC_FREEZE and "300 ms (30% of compile)" in got[0].text
