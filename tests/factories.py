"""Hand-built sessions for model, analysis and renderer tests (no torch needed).

``seed_session()`` mimics the parametrized seed case: one ``forward`` frame whose samples are
mostly parametrization property tracing; ``make_session()`` builds arbitrary small sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dynaprof.analysis.attribution import apply_attribution
from dynaprof.model import (
    SCHEMA_VERSION,
    Attempt,
    CaptureInfo,
    CompiledFrame,
    FunctionRef,
    GuardStats,
    Location,
    PropertyTrace,
    RunInfo,
    Samples,
    Session,
    Span,
    Stack,
)
from dynaprof.model.journal import Kernel

SP = "/venv/lib/python3.11/site-packages/"
DYN = SP + "torch/_dynamo/"


def run_info(**kw: object) -> RunInfo:
    base: dict[str, object] = dict(
        command=["dynaprof", "run", "repro.py"],
        target="repro.py",
        argv=["repro.py"],
        cwd="/work",
        python_version="3.11.7",
        torch_version="2.13.0+cpu",
        dynaprof_version="0.1.0",
        platform="Linux-x86_64",
        hostname="host",
        device="cpu",
        start_time="2026-11-30T12:00:00+00:00",
        wall_s=5.0,
        exit_status=0,
        end_reason="exited",
        complete=True,
        pid=123,
    )
    base.update(kw)
    return RunInfo(**base)  # type: ignore[arg-type]


@dataclass
class FunctionTable:
    """Interns FunctionRefs so tests can write stacks as lists of (name, file, kind)."""

    functions: list[FunctionRef] = field(default_factory=list)
    index: dict[tuple[str, str, int, str], int] = field(default_factory=dict)

    def __call__(self, name: str, filename: str, lineno: int = 1, kind: str = "python") -> int:
        key = (name, filename, lineno, kind)
        if key not in self.index:
            self.index[key] = len(self.functions)
            self.functions.append(FunctionRef(name, filename, lineno, kind))
        return self.index[key]


def kernel(key: str, cause: int, name: str, nodes: int, param_nodes: int, param: int, rest: int,
           users: tuple[int, ...] = ()) -> Kernel:
    """A journal ``kernel`` record, its ids the session's (as ``ingest.assemble`` hands it on)."""
    return Kernel(t="kernel", key=key, cause=cause, name=name, nodes=nodes, param_nodes=param_nodes, param=param,
                  rest=rest, users=list(users))


def frame(key: str = "0/0", **kw: object) -> CompiledFrame:
    base: dict[str, object] = dict(
        key=key,
        compile_id=key.split("#")[0],
        trace_id=key.split("#")[0],
        generation=0,
        name="forward",
        filename="/work/repro.py",
        lineno=11,
        thread=1,
        thread_name="MainThread",
        start_s=1.0,
        compile_time_s=1.0,
        guard_count=100,
        phases={"entire_frame_compile": 1.0, "bytecode_tracing": 0.8, "build_guards": 0.1},
        attempts=[Attempt(0, 1.0, 1.0)],
    )
    base.update(kw)
    return CompiledFrame(**base)  # type: ignore[arg-type]


def seed_session(parametrized: bool = True, with_samples: bool = True) -> Session:
    """One compiled forward; with ``parametrized`` 70% of samples are in property tracing."""
    t = FunctionTable()
    root = [
        t("_compile", DYN + "convert_frame.py", 1633),
        t("compile_frame", DYN + "convert_frame.py", 1523),
        t("InstructionTranslatorBase.run", DYN + "symbolic_convert.py", 1943),
    ]
    fwd = t("Module.forward", "/work/repro.py", 11, "traced")
    seq = t("Sequential.forward", SP + "torch/nn/modules/container.py", 248, "traced")
    lin = t("Linear.forward", SP + "torch/nn/modules/linear.py", 130, "traced")
    stacks: list[Stack] = []
    compile_s = 1.2 if parametrized else 0.3
    if parametrized:
        rdd = t("UserDefinedObjectVariable.resolve_data_descriptor", DYN + "variables/user_defined.py", 3386)
        for prop, secs in (("Linear.weight", 0.45), ("Linear.bias", 0.39)):
            p = t(prop, SP + "torch/nn/utils/parametrize.py", 419, "property")
            g = t("get_parametrized", SP + "torch/nn/utils/parametrize.py", 419, "traced")
            pf = t("Parametrization.forward", "/work/repro.py", 30, "traced")
            stacks.append(Stack("0/0", 0, 1, [*root, rdd, root[2]], [fwd, seq, lin, p, g, pf], int(secs * 1000), secs))
    stacks.append(
        Stack("0/0", 0, 1, [*root], [fwd, seq, lin], 150 if parametrized else 180, 0.15 if parametrized else 0.18)
    )
    guards = t("CheckFunctionManager.__init__", DYN + "guards.py", 2700)
    gsec = 0.15 if parametrized else 0.06
    stacks.append(Stack("0/0", 0, 1, [root[0], guards], [], int(gsec * 1000), gsec))
    other = t("_find_and_load", "<frozen importlib._bootstrap>", 1176)
    stacks.append(Stack("0/0", 0, 1, [root[0], other], [], 60, 0.06))
    total = sum(s.seconds for s in stacks)
    props = []
    if parametrized:
        props = [
            PropertyTrace(
                "Linear.weight",
                "ParametrizedLinear",
                "weight",
                SP + "torch/nn/utils/parametrize.py",
                419,
                True,
                32,
                32,
                0.47,
            ),
            PropertyTrace(
                "Linear.bias",
                "ParametrizedLinear",
                "bias",
                SP + "torch/nn/utils/parametrize.py",
                419,
                True,
                32,
                32,
                0.41,
            ),
        ]
    f = frame(
        "0/0",
        compile_time_s=compile_s,
        guard_count=2639 if parametrized else 417,
        guards=GuardStats(
            count=2639 if parametrized else 417,
            tree_leaf_count=1378 if parametrized else 277,
            tree_depth=17 if parametrized else 10,
            code_text_chars=765884 if parametrized else 180226,
        ),
        inlined_calls=546 if parametrized else 34,
        ir_count=5483 if parametrized else 299,
        properties=props,
        call_site=[Location("<module>", "/work/repro.py", 38), Location("forward", "/work/repro.py", 11)],
        phases={
            "entire_frame_compile": compile_s,
            "bytecode_tracing": compile_s * 0.82,
            "build_guards": compile_s * 0.12,
        },
        spans=[
            Span("entire_frame_compile", 1.0, compile_s, 1),
            Span("bytecode_tracing", 1.01, compile_s * 0.82, 1),
            Span("build_guards", 1.0 + compile_s * 0.85, compile_s * 0.12, 1),
        ],
    )
    samples = (
        Samples("builtin", 1000.0, 950.0, sum(s.samples for s in stacks), total, 0, stacks) if with_samples else None
    )
    s = Session(
        schema_version=SCHEMA_VERSION,
        run=run_info(),
        capture=CaptureInfo(sampler="builtin" if with_samples else "none", requested_hz=1000.0),
        frames=[f],
        functions=t.functions,
        samples=samples,
        spans=[Span("script", 0.0, 5.0, 1)],
    )
    apply_attribution(s)
    return s


def make_session(
    frames: list[CompiledFrame], stacks: list[Stack] | None = None, functions: list[FunctionRef] | None = None
) -> Session:
    samples = None
    if stacks is not None:
        samples = Samples(
            "builtin", 1000.0, 1000.0, sum(s.samples for s in stacks), sum(s.seconds for s in stacks), 0, stacks
        )
    s = Session(
        SCHEMA_VERSION,
        run_info(),
        CaptureInfo(sampler="builtin" if stacks is not None else "none"),
        frames=frames,
        functions=functions or [],
        samples=samples,
    )
    apply_attribution(s)
    return s


IND = SP + "torch/_inductor/"


def inductor_session(user_cause: str = "forward (model.py:26)",
                     param_cause: str = "Linear.weight via Parametrization") -> Session:
    """A compile through AOT autograd and Inductor with both axes: a parametrization traced by
    Dynamo and then lowered, generated and compiled by Inductor (node causes), a user cause, whole
    graph work, two tiny causes (under 1%) and a restart whose first attempt was thrown away.
    Causes come from ``cause:*`` function-table entries, phases from torch's spans (``span``)."""
    t = FunctionTable()
    conv = t("_compile", DYN + "convert_frame.py", 1633)
    run = t("InstructionTranslatorBase.run", DYN + "symbolic_convert.py", 1943)
    fwd = t("Model.forward", "/work/model.py", 20, "traced")
    lin = t("Linear.forward", SP + "torch/nn/modules/linear.py", 130, "traced")
    prop = t("Linear.weight", SP + "torch/nn/utils/parametrize.py", 419, "property")
    getp = t("get_parametrized", SP + "torch/nn/utils/parametrize.py", 419, "traced")
    pfwd = t("Parametrization.forward", "/work/model.py", 8, "traced")
    helper = t("helper", "/work/model.py", 40, "traced")
    aot = t("aot_module_simplified", SP + "torch/_functorch/aot_autograd.py", 1100)
    lower = t("GraphLowering.run_node", IND + "graph.py", 900)
    gen = t("Scheduler.codegen", IND + "scheduler.py", 4000)
    build = t("CppBuilder.build", IND + "cpp_builder.py", 1500)
    guards = t("CheckFunctionManager.__init__", DYN + "guards.py", 2700)
    fake = t("FakeTensorMode.dispatch", SP + "torch/_subclasses/fake_tensor.py", 1300)
    c_param = t(param_cause, "/work/model.py", 8, "cause:parametrization")
    c_user = t(user_cause, "/work/model.py", 26, "cause:user")
    c_unknown = t("unknown (no provenance)", "", 0, "cause:unknown")

    def sp(*names: str) -> list[int]:
        return [t(n, "", 0, "span") for n in names]

    backend = sp("entire_frame_compile", "backend_compile", "create_aot_dispatcher_function", "inductor_compile")
    stacks = [
        # Dynamo tracing the parametrized property (traced stack, no node cause)
        Stack("0/0", 1, 1, [conv, run], [fwd, lin, prop, getp, pfwd], 1500, 1.5,
              sp("entire_frame_compile", "bytecode_tracing")),
        Stack("0/0", 1, 1, [conv, run], [fwd], 600, 0.6, sp("entire_frame_compile", "bytecode_tracing")),
        # attempt 0, thrown away by the restart
        Stack("0/0", 0, 1, [conv, run], [fwd, helper], 400, 0.4, sp("entire_frame_compile", "compile_attempt_0")),
        # the backend: the traced stack is still there (Dynamo calls it from its loop) but says nothing
        Stack("0/0", 1, 1, [conv, aot, lower], [fwd], 2000, 2.0, [*backend, *sp("GraphLowering.run")], c_param),
        Stack("0/0", 1, 1, [conv, aot, gen], [], 3000, 3.0, [*backend, *sp("Scheduler.codegen")], c_param),
        Stack("0/0", 1, 1, [conv, aot, build], [], 8000, 8.0, [*backend, *sp("compile_file")], c_param),
        Stack("0/0", 1, 1, [conv, aot, lower], [], 1000, 1.0, [*backend, *sp("GraphLowering.run")], c_user),
        Stack("0/0", 1, 1, [conv, aot, build], [], 2000, 2.0, [*backend, *sp("compile_file")], c_user),
        Stack("0/0", 1, 1, [conv, aot], [], 700, 0.7, [*backend, *sp("aot_trace_joint_graph")], c_user),
        Stack("0/0", 1, 1, [conv, aot, gen], [], 500, 0.5, [*backend, *sp("Scheduler.__init__")]),
        Stack("0/0", 1, 1, [conv, guards], [], 300, 0.3, sp("entire_frame_compile", "build_guards")),
        Stack("0/0", 1, 1, [conv, aot, lower], [], 100, 0.1, [*backend, *sp("GraphLowering.run")], c_unknown),
        Stack("0/0", 1, 1, [conv, run, fake], [fwd, helper], 50, 0.05, sp("entire_frame_compile")),
    ]
    total = sum(s.seconds for s in stacks)
    f = frame("0/0", name="forward", filename="/work/model.py", lineno=20, compile_time_s=total, restarts=1,
              restart_reasons=["speculate_subgraph failed"],
              attempts=[Attempt(0, 1.0, 0.4), Attempt(1, 1.4, total - 0.4)], graph_op_count=96)
    return make_session([f], stacks, t.functions)
