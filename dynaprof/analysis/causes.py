"""Two axes for every sampled second: the compiler's phase and the user code it worked for.

*Phase* (``PHASES``): the innermost of torch's own timed spans open at the sample that names a
phase (``bytecode_tracing``, ``aot_trace_joint_graph``, ``Scheduler.codegen``, ``compile_file``...);
where torch has none (torch 2.4, or between spans), the innermost compiler subsystem on the stack:
the deepest frame that belongs to one. Never "any frame anywhere", which labelled all of
Inductor's work under AOT autograd as Inductor, and hashing for cache keys as C++ compile.

*Cause*: while Dynamo traces, the traced user stack (a parametrization when it passes through a
``@property`` that ``nn.utils.parametrize`` injected); during AOT autograd and Inductor, the FX node
being processed as capture recorded it (``Stack.cause``: a parametrization, user code, a named mix
for a kernel fused from several, or unknown when the node had no provenance); work that no node or
traced code owns is ``whole graph``. Time in an attempt that a restart threw away is counted on both
axes and also as restart waste.

The garbage collector's time (the sampler times each collection and ends the next sample's stack in
``GC_FUNCTION`` for it) is its own phase and its own cause on both axes: a collection runs in C, so
no sample lands inside it, and its cost grows with everything alive, not with the code whose
allocation started it.

Pure functions of the session's facts; ``dynaprof.analysis.attribution`` stores the result.
"""

from __future__ import annotations

from collections.abc import Sequence

from dynaprof.fmt import stored_s
from dynaprof.model.code_names import code_label
from dynaprof.model.journal import GC_FUNCTION, KERNEL_CAUSE, KERNEL_WAIT_CAUSE, PARAMETRIZED_CALL
from dynaprof.model.session import (
    CAUSE_COLLECTOR,
    CAUSE_PARAMETRIZATION,
    CAUSE_TOOLCHAIN,
    CAUSE_UNKNOWN,
    CAUSE_WHOLE_GRAPH,
    GROUP_OF,
    PARAMETRIZE_FILE,
    PHASES,
    UNNAMED_CAUSES,
    Axes,
    FunctionRef,
    Session,
    Stack,
)
from dynaprof.model.toolchain import toolchain_file, toolchain_frame
from dynaprof.model.torch_files import torch_file

#: (file suffix, function name) of the frames where Dynamo resolves an ``@property``, outer then
#: inner: the compiler stack's signature of a property read, for samples and cProfile data that have
#: no traced stack (py-spy and cProfile cannot read frame locals)
PROPERTY_SIGNATURE: tuple[tuple[str, str], ...] = (
    ("torch/_dynamo/variables/user_defined.py", "resolve_data_descriptor"),
    ("torch/_dynamo/variables/functions.py", "tp_descr_get_impl"),
)


def property_signature_step(filename: str, name: str) -> int | None:
    """Which frame of ``PROPERTY_SIGNATURE`` a function is (0 outer, 1 inner), else None."""
    path = filename.replace("\\", "/")
    short = name.rsplit(".", 1)[-1]
    return next((i for i, (f, n) in enumerate(PROPERTY_SIGNATURE) if short == n and path.endswith(f)), None)


def in_parametrize(f: FunctionRef) -> bool:
    """``f`` is defined in ``torch/nn/utils/parametrize.py``."""
    return PARAMETRIZE_FILE in f.filename.replace("\\", "/")


def is_parametrization(f: FunctionRef) -> bool:
    """A traced function that is parametrization machinery entered through its ``@property``: the
    injected property itself, or its getter ``get_parametrized``."""
    return in_parametrize(f) and (f.kind == "property" or (f.kind == "traced" and f.name.endswith("get_parametrized")))


def resolves_property(compiler: Sequence[FunctionRef]) -> bool:
    """The compiler stack resolves a property: ``PROPERTY_SIGNATURE``'s outer frame, then (deeper)
    its inner one."""
    seen = False
    for f in compiler:
        step = property_signature_step(f.filename, f.name)
        if step == 0:
            seen = True
        elif seen and step == 1:
            return True
    return False

#: torch span name (exact) -> phase; spans not named here are containers (``backend_compile``,
#: ``inductor_compile``...) that say nothing finer than their children or the frames
_SPAN_PHASE: dict[str, str] = {
    "bytecode_tracing": "dynamo_tracing",
    "build_guards": "guard_building",
    "gc": "other",
    "aot_collect_metadata": "aot_trace",
    "aot_trace_joint_graph": "aot_trace",
    "min_cut_rematerialization_partition": "aot_partition",
    "default_partition": "aot_partition",
    "create_aot_dispatcher_function": "aot_other",
    "_recursive_joint_graph_passes": "graph_passes",
    "_recursive_pre_grad_passes": "graph_passes",
    "_recursive_post_grad_passes": "graph_passes",
    "GraphLowering.run": "lowering",
    "Scheduler.__init__": "scheduling",
    "Scheduler.fused_nodes": "scheduling",
    "Scheduler.codegen": "codegen",
    "GraphLowering.codegen": "codegen",
    "PythonWrapperCodegen.generate": "codegen",
    "code_gen": "codegen",
    "compile_file": "kernel_compile",
    "async_compile.wait": "kernel_compile",
    "AsyncCompile.wait": "kernel_compile",
    "PyCodeCache.load_by_key_path": "kernel_compile",
    "inductor_codecache_torch_key": "cache",
    "aoti_precompile_header": "toolchain_setup",
}
#: span name prefixes -> phase
_SPAN_PREFIX: tuple[tuple[str, str], ...] = (
    ("compile_attempt_", "dynamo_tracing"),
    ("pass.", "graph_passes"),
    ("TritonBundler.", "cache"),
    ("CacheBase.", "cache"),
    ("FxGraphCache.", "cache"),
    ("AOTAutogradCache.", "cache"),
)

#: (file needle, phase), most specific first: the deepest frame that matches one names the phase
_FRAME_PHASE: tuple[tuple[str, str], ...] = (
    ("torch/_dynamo/guards.py", "guard_building"),
    ("torch/_inductor/codecache.py", "kernel_compile"),
    ("torch/_inductor/cpp_builder.py", "kernel_compile"),
    ("torch/_inductor/async_compile.py", "kernel_compile"),
    ("torch/_inductor/compile_worker/", "kernel_compile"),
    ("torch/_inductor/runtime/triton_heuristics.py", "kernel_compile"),
    ("triton/compiler/", "kernel_compile"),
    ("triton/runtime/", "kernel_compile"),
    ("torch/_inductor/select_algorithm.py", "autotuning"),
    ("torch/_inductor/autotune_process.py", "autotuning"),
    ("torch/_inductor/fx_passes/", "graph_passes"),
    ("torch/_inductor/pattern_matcher.py", "graph_passes"),
    ("torch/_inductor/lowering.py", "lowering"),
    ("torch/_inductor/scheduler.py", "scheduling"),
    ("torch/_inductor/codegen/", "codegen"),
    ("torch/_inductor/", "inductor_other"),
    ("torch/_functorch/partitioners.py", "aot_partition"),
    ("torch/fx/experimental/proxy_tensor.py", "aot_trace"),
    ("torch/_functorch/", "aot_other"),
    ("torch/_subclasses/fake_tensor.py", "fake_tensor"),
    ("torch/_subclasses/fake_impls.py", "fake_tensor"),
    ("torch/_subclasses/meta_utils.py", "fake_tensor"),
    ("torch/_dynamo/variables/builder.py", "fake_tensor"),
    ("torch/_dynamo/symbolic_convert.py", "dynamo_tracing"),
    ("torch/_dynamo/variables/", "dynamo_tracing"),
    ("torch/_dynamo/output_graph.py", "dynamo_tracing"),
)
#: phases of the backend (AOT autograd and Inductor): fake-tensor work under them is theirs, and
#: the traced stack (still there: Dynamo calls the backend from its loop) names none of their causes
BACKEND_PHASES = frozenset(
    p for p in PHASES if GROUP_OF[p] in ("aot_autograd", "inductor", "kernel_compile", "toolchain_setup")
)


def span_phase(name: str) -> str | None:
    phase = _SPAN_PHASE.get(name)
    if phase is not None:
        return phase
    for prefix, p in _SPAN_PREFIX:
        if name.startswith(prefix):
            return p
    return None


def frame_phase(f: FunctionRef) -> str | None:
    path = "/" + f.filename.replace("\\", "/")
    for needle, phase in _FRAME_PHASE:
        if needle in path:
            return phase
    return None


class Tables:
    """Per-function facts worked out once per session (stacks reuse a few thousand functions)."""

    def __init__(self, functions: Sequence[FunctionRef], parametrized_frames: frozenset[str] = frozenset()) -> None:
        self.functions = functions
        #: frames where capture measured parametrized properties being traced
        self.parametrized_frames = parametrized_frames
        # each of these reads only the file, but for a toolchain file's names: once per file (a
        # session has tens of thousands of functions in a few hundred files)
        by_file: dict[str, tuple[str | None, bool, bool]] = {}
        for f in functions:
            if f.filename not in by_file:
                by_file[f.filename] = (frame_phase(f), toolchain_file(f.filename), in_parametrize(f))
        self.frame = [by_file[f.filename][0] for f in functions]
        self.span = [span_phase(f.name) if f.kind == "span" else None for f in functions]
        self.toolchain = [by_file[f.filename][1] and toolchain_frame(f) for f in functions]
        self.parametrize = [by_file[f.filename][2] for f in functions]
        # the same two tables as sets of indices: "any frame of this stack?" is then one C-level
        # isdisjoint per stack, not a Python loop over its 30-70 frames (100,000 stacks in a big run)
        self.toolchain_ids = frozenset(i for i, x in enumerate(self.toolchain) if x)
        self.parametrize_ids = frozenset(i for i, x in enumerate(self.parametrize) if x)
        self.gc_ids = frozenset(i for i, f in enumerate(functions) if f.kind == GC_FUNCTION[3])
        self.traced_causes: dict[tuple[int, ...], tuple[str, str] | None] = {}  # a few thousand distinct


def tables(functions: Sequence[FunctionRef]) -> Tables:
    return Tables(functions)


def session_tables(session: Session) -> Tables:
    """``Tables`` of a session, knowing which of its frames traced parametrized properties."""
    return Tables(session.functions,
                  frozenset(f.key for f in session.frames if any(p.parametrized for p in f.properties)))


def stack_phase(st: Stack, t: Tables) -> str:
    """The phase of one sample (see the module docstring)."""
    if not t.gc_ids.isdisjoint(st.compiler):  # the collector's time since the sample before
        return "garbage_collection"
    if not t.toolchain_ids.isdisjoint(st.compiler):  # any(t.toolchain[i] for i in st.compiler)
        return "toolchain_setup"
    deepest = None
    for i in reversed(st.compiler):
        p = t.frame[i]
        if p is not None:
            deepest = p
            break
    for i in reversed(st.spans):
        p = t.span[i]
        if p is None:
            continue
        if p == "dynamo_tracing" and deepest in ("fake_tensor", "guard_building"):
            return deepest  # Dynamo's own span covers its fake-tensor work: say which
        return p
    if deepest == "fake_tensor":  # fake tensors under AOT autograd or Inductor are their work
        for i in reversed(st.compiler):
            p = t.frame[i]
            if p in BACKEND_PHASES:
                return p
    return deepest or "other"


def stack_phases(session: Session, t: Tables | None = None) -> list[str]:
    """The phase of each stack of ``session.samples.stacks`` (same order). Pure: a render works it
    out once (``analysis.derived.Derived.phases``) and hands it to the category, cause and
    user-code views, which all start from it. ``t``: the session's tables, where the caller has them."""
    if session.samples is None:
        return []
    t = Tables(session.functions) if t is None else t
    return [stack_phase(st, t) for st in session.samples.stacks]


def _user_file(f: FunctionRef) -> bool:
    return not (torch_file(f.filename) or f.filename.startswith("<"))


def _parametrization_class(f: FunctionRef) -> bool:
    """A traced method of the parametrization module itself (not torch's container plumbing)."""
    path = f.filename.replace("\\", "/")
    return f.kind == "traced" and "." in f.name and PARAMETRIZE_FILE not in path and "torch/nn/modules/" not in path


def traced_cause(traced: Sequence[FunctionRef]) -> tuple[str, str] | None:
    """(cause key, detail label) of a sample taken while Dynamo traced ``traced``."""
    for k, f in enumerate(traced):
        if f.kind == PARAMETRIZED_CALL:  # torch 2.4: the parametrized class makes Dynamo inline the call
            return CAUSE_PARAMETRIZATION, f"parametrized {f.name} calls (Module._call_impl inlined per class)"
        if f.kind == "property" and in_parametrize(f):
            via = next((g.name for g in traced[k + 1 :] if _parametrization_class(g)), None)
            cls = via.rsplit(".", 1)[0] if via and "." in via else None
            return CAUSE_PARAMETRIZATION, f"{f.name} via {cls}" if cls else f.name
        if f.kind == "traced" and in_parametrize(f):
            if is_parametrization(f):
                return CAUSE_PARAMETRIZATION, "parametrization"
            # registering or removing one while Dynamo traces: the peft target_parameters pattern
            return CAUSE_PARAMETRIZATION, f"{f.name} inside the compiled code"
    for f in reversed(traced):
        if f.kind == "traced" and _user_file(f):
            label = code_label(f.name, f.filename, f.lineno)
            return label, label
    return None


def node_cause(f: FunctionRef) -> tuple[str, str]:
    """(cause key, detail label) from a ``cause:*`` function-table entry made by capture."""
    if f.kind == "cause:parametrization":
        return CAUSE_PARAMETRIZATION, f.name
    if f.kind in ("cause:unknown", KERNEL_WAIT_CAUSE, KERNEL_CAUSE):  # its record was cut off: unsplit
        return CAUSE_UNKNOWN, CAUSE_UNKNOWN
    return f.name, f.name


def stack_cause(st: Stack, t: Tables, phase: str) -> tuple[str, str]:
    if phase == "garbage_collection":
        return CAUSE_COLLECTOR, CAUSE_COLLECTOR
    fn = t.functions
    if 0 <= st.cause < len(fn) and fn[st.cause].kind.startswith("cause:"):
        return node_cause(fn[st.cause])
    param = t.parametrize
    if not t.parametrize_ids.isdisjoint(st.compiler):  # the deepest such frame names it (most stacks have none)
        for i in reversed(st.compiler):  # parametrize.py running for real while compiling (torch 2.4
            if param[i]:  # deep-copies parametrized modules into fake tensors, for one)
                return CAUSE_PARAMETRIZATION, f"parametrized modules ({fn[i].name.rsplit('.', 1)[-1]} while compiling)"
    # Dynamo calls the backend from inside its translator loop, so the traced stack is still there
    # while AOT autograd and Inductor run: it names the cause only of Dynamo's own work
    if st.traced and phase not in BACKEND_PHASES:
        key = tuple(st.traced)
        if key in t.traced_causes:
            got = t.traced_causes[key]
        else:
            got = t.traced_causes[key] = traced_cause([fn[i] for i in st.traced])
        if got is not None:
            return got
    if not st.traced and st.frame in t.parametrized_frames and phase not in BACKEND_PHASES \
            and resolves_property([fn[i] for i in st.compiler]):
        return CAUSE_PARAMETRIZATION, "parametrization"  # py-spy: no traced stack, the property's signature
    return CAUSE_WHOLE_GRAPH, CAUSE_WHOLE_GRAPH


def toolchain_owner(stacks: Sequence[Stack], phases: Sequence[str], t: Tables) -> tuple[str, str]:
    """Who the one-time toolchain setup is for: the one cause whose kernels were compiled in this
    process (a parametrization when only its kernels needed C++: the plain model pays nothing), or
    ``CAUSE_TOOLCHAIN`` when kernels of several causes were (any of them would have paid it)."""
    owners: dict[str, str] = {}
    for st, phase in zip(stacks, phases, strict=True):
        if phase == "kernel_compile":
            cause, detail = stack_cause(st, t, phase)
            if cause not in UNNAMED_CAUSES:
                owners.setdefault(cause, detail)
    if len(owners) == 1:
        return next(iter(owners.items()))
    return CAUSE_TOOLCHAIN, CAUSE_TOOLCHAIN


def stack_causes(session: Session, t: Tables, phases: Sequence[str]) -> list[tuple[str, str]]:
    """(cause, detail) of each of ``session.samples.stacks``: ``stack_cause``, with the toolchain
    setup given to ``toolchain_owner``."""
    stacks = session.samples.stacks if session.samples else []
    owner: tuple[str, str] | None = None
    out = []
    for st, phase in zip(stacks, phases, strict=True):
        if phase == "toolchain_setup":
            if owner is None:
                owner = toolchain_owner(stacks, phases, t)
            out.append(owner)
        else:
            out.append(stack_cause(st, t, phase))
    return out


def _add(d: dict[str, float], k: str, v: float) -> None:
    d[k] = d.get(k, 0.0) + v


def axes(session: Session, phases: Sequence[str] | None = None,
         causes: Sequence[tuple[str, str]] | None = None) -> tuple[Axes | None, dict[str, Axes]]:
    """The run's and each frame's cause x phase view (None when there are no samples);
    ``phases`` / ``causes``: ``stack_phases(session)`` / ``stack_causes(...)`` when the caller has them."""
    if session.samples is None:
        return None, {}
    t = session_tables(session)
    phase_of = stack_phases(session, t) if phases is None else phases
    finals = {f.key: f.restarts for f in session.frames}
    run = Axes()
    per: dict[str, Axes] = {f.key: Axes() for f in session.frames}
    cause_of = stack_causes(session, t, phase_of) if causes is None else causes
    for st, phase, (cause, detail) in zip(session.samples.stacks, phase_of, cause_of, strict=True):
        final = finals.get(st.frame) if st.frame is not None else None
        wasted = final is not None and 0 <= st.attempt < final
        targets = [run] + ([per[st.frame]] if st.frame in per else [])
        for ax in targets:
            _add(ax.causes, cause, st.seconds)
            _add(ax.matrix.setdefault(phase, {}), cause, st.seconds)
            if cause == CAUSE_PARAMETRIZATION:
                _add(ax.parametrizations, detail, st.seconds)
            if wasted:
                ax.restart_waste.seconds += st.seconds
                _add(ax.restart_waste.by_cause, cause, st.seconds)
    for ax in [run, *per.values()]:
        _merge_unnamed(ax.parametrizations)
        _round(ax)
    return run, per


def _merge_unnamed(labels: dict[str, float]) -> None:
    """Samples taken before Dynamo reached the parametrization's own ``forward`` know the property
    but not its class: give them to ``Owner.prop via Class`` when exactly one such label exists."""
    for label in [k for k in labels if " via " not in k]:
        named = [k for k in labels if k.startswith(label + " via ")]
        if len(named) == 1:
            labels[named[0]] += labels.pop(label)


def _round(ax: Axes) -> None:
    ax.causes = {k: stored_s(v) for k, v in sorted(ax.causes.items(), key=lambda kv: -kv[1])}
    ax.matrix = {p: {c: stored_s(v) for c, v in sorted(row.items(), key=lambda kv: -kv[1])}
                 for p, row in ax.matrix.items()}
    ax.parametrizations = {k: stored_s(v) for k, v in sorted(ax.parametrizations.items(), key=lambda kv: -kv[1])}
    ax.restart_waste.seconds = stored_s(ax.restart_waste.seconds)
    ax.restart_waste.by_cause = {k: stored_s(v) for k, v in ax.restart_waste.by_cause.items()}


def phase_seconds(ax: Axes, cause: str | None = None) -> dict[str, float]:
    """Seconds per phase (for one cause, or all), largest first."""
    out: dict[str, float] = {}
    for phase, row in ax.matrix.items():
        v = sum(row.values()) if cause is None else row.get(cause, 0.0)
        if v > 0:
            out[phase] = v
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))
