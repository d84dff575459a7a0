"""Attribution: every sampled second lands in exactly one category.

The rules live here and nowhere else (docs/attribution.md describes them for users). They look at
one aggregated stack: the real compiler stack (``Stack.compiler``), the traced-user-code stack
(``Stack.traced``), and the attempt the sample came from. The first rule that matches wins, in the
order of ``CATEGORIES``:

1. ``restarts``: the sample belongs to an attempt that was thrown away (attempt < final attempt).
2. ``parametrization``: the traced stack passes through a ``@property`` injected by
   ``torch.nn.utils.parametrize`` (or its getter ``get_parametrized``). Samples without a traced
   stack (py-spy cannot read frame locals) match when the compiler stack resolves a property
   (``resolve_data_descriptor`` then ``tp_descr_get_impl``) in a frame where dynaprof measured
   parametrized properties being traced.
3. ``guard_building``: a compiler frame in ``torch/_dynamo/guards.py``.
4. ``cpp_triton_compile``: C++/Triton compilation (Inductor's code cache, cpp builder, async
   compile workers, triton's compiler).
5. ``inductor_codegen``: any other frame in ``torch/_inductor/``.
6. ``aot_autograd``: a frame in ``torch/_functorch/``.
7. ``fake_tensor``: fake-tensor propagation or Dynamo's VariableBuilder.
8. ``user_tracing``: Dynamo was symbolically executing user code (any other tracing).
9. ``other``: everything else (compile setup, lazy imports, gc, ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dynaprof.analysis import causes
from dynaprof.model.session import CATEGORIES, PHASE_CATEGORY, FunctionRef, Session, Stack

PARAMETRIZE_FILE = "torch/nn/utils/parametrize.py"

_CPP_TRITON = (
    "torch/_inductor/codecache.py",
    "torch/_inductor/cpp_builder.py",
    "torch/_inductor/async_compile.py",
    "torch/_inductor/compile_worker/",
    "torch/_inductor/runtime/triton_heuristics.py",
    "triton/compiler/",
    "triton/runtime/",
)
_FAKE = (
    "torch/_subclasses/fake_tensor.py",
    "torch/_subclasses/fake_impls.py",
    "torch/_subclasses/meta_utils.py",
    "torch/_dynamo/variables/builder.py",
)
_TRACING = ("torch/_dynamo/symbolic_convert.py",)


def _path(f: FunctionRef) -> str:
    return "/" + f.filename.replace("\\", "/")


def _any_in(funcs: Iterable[FunctionRef], needles: Sequence[str]) -> bool:
    return any(any(n in _path(f) for n in needles) for f in funcs)


def is_parametrization(f: FunctionRef) -> bool:
    """A traced function that is parametrization machinery entered through its @property."""
    if PARAMETRIZE_FILE not in _path(f):
        return False
    return f.kind == "property" or (f.kind == "traced" and f.name.endswith("get_parametrized"))


def _resolves_property(compiler: Sequence[FunctionRef]) -> bool:
    seen_resolve = False
    for f in compiler:
        if f.name.endswith("resolve_data_descriptor"):
            seen_resolve = True
        elif seen_resolve and f.name.endswith("tp_descr_get_impl"):
            return True
    return False


def classify(
    stack: Stack, functions: Sequence[FunctionRef], final_attempt: int | None, parametrized_frame: bool = False
) -> str:
    """The category of one stack; ``final_attempt`` is the frame's last attempt index and
    ``parametrized_frame`` whether parametrized properties were traced in that frame."""
    return _classify_all(
        [stack], functions, {} if final_attempt is None else {stack.frame or "": final_attempt},
        {stack.frame or ""} if parametrized_frame else set(), frame_key=stack.frame or "",
    )[0]


def _classify_all(
    stacks: Sequence[Stack],
    functions: Sequence[FunctionRef],
    finals: dict[str, int],
    parametrized: set[str],
    frame_key: str | None = None,
    phases: Sequence[str] | None = None,
) -> list[str]:
    """``classify`` of every stack, with each function's facts worked out once (a big session has
    millions of frames on its stacks but a few thousand distinct functions). After the restart and
    parametrization rules, a stack's category is that of its phase (``analysis.causes``): the
    innermost torch span that names one, else the deepest compiler subsystem frame."""
    tables = causes.tables(functions)
    phase_of = [causes.stack_phase(st, tables) for st in stacks] if phases is None else phases
    param = [is_parametrization(f) for f in functions]
    out: list[str] = []
    append = out.append
    for st, phase in zip(stacks, phase_of, strict=True):
        frame = st.frame if frame_key is None else frame_key
        final = finals.get(frame) if frame is not None else None
        if final is not None and 0 <= st.attempt < final:
            append("restarts")
            continue
        traced = st.traced
        if traced and any(param[i] for i in traced):
            append("parametrization")
            continue
        compiler = st.compiler
        if not traced and frame in parametrized and _resolves_property([functions[i] for i in compiler]):
            append("parametrization")
            continue
        cat = PHASE_CATEGORY[phase]
        append("user_tracing" if cat == "other" and traced else cat)
    return out


def final_attempts(session: Session) -> dict[str, int]:
    return {f.key: f.restarts for f in session.frames}


def stack_categories(session: Session, phases: Sequence[str] | None = None) -> list[str]:
    """Category of each stack in ``session.samples.stacks`` (same order). Pure: a render works
    it out once (``analysis.derived.Derived.categories``) and hands it on; ``phases``:
    ``causes.stack_phases(session)`` when the caller has it."""
    if session.samples is None:
        return []
    finals = final_attempts(session)
    parametrized = {f.key for f in session.frames if any(p.parametrized for p in f.properties)}
    return _classify_all(session.samples.stacks, session.functions, finals, parametrized, phases=phases)


def empty_attribution() -> dict[str, float]:
    return dict.fromkeys(CATEGORIES, 0.0)


def attribute(
    session: Session, categories: Sequence[str] | None = None
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Seconds per category for the run and for each frame key (all categories present);
    ``categories``: ``stack_categories(session)`` when the caller has it."""
    run = empty_attribution()
    per_frame: dict[str, dict[str, float]] = {f.key: empty_attribution() for f in session.frames}
    if session.samples is None:
        return run, per_frame
    cats = stack_categories(session) if categories is None else categories
    for st, cat in zip(session.samples.stacks, cats, strict=True):
        run[cat] += st.seconds
        if st.frame is not None and st.frame in per_frame:
            per_frame[st.frame][cat] += st.seconds
    return run, per_frame


def apply_attribution(
    session: Session, categories: Sequence[str] | None = None, phases: Sequence[str] | None = None
) -> None:
    """Store the attribution in the session (run level and per frame): the categories, and the
    cause x phase view (``axes``). The one place derived data is put into a session; the CLI
    calls it once per command, where a session is built or loaded, before rendering."""
    if session.samples is None:
        session.attribution = {}
        session.axes = None
        for f in session.frames:
            f.attribution = {}
            f.axes = None
        return
    run, per_frame = attribute(session, categories)
    session.attribution = {k: round(v, 6) for k, v in run.items()}
    run_axes, frame_axes = causes.axes(session, phases)
    session.axes = run_axes
    for f in session.frames:
        f.attribution = {k: round(v, 6) for k, v in per_frame[f.key].items()}
        f.axes = frame_axes.get(f.key)


def property_seconds(session: Session, frame: str | None = None) -> dict[str, float]:
    """Sampled seconds per traced @property label (outermost property on each stack)."""
    out: dict[str, float] = {}
    if session.samples is None:
        return out
    for st in session.samples.stacks:
        if frame is not None and st.frame != frame:
            continue
        for i in st.traced:
            f = session.functions[i]
            if f.kind == "property":
                out[f.name] = out.get(f.name, 0.0) + st.seconds
                break
    return out
