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

from dynaprof.model.session import CATEGORIES, FunctionRef, Session, Stack

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


#: rules 3-8 on the compiler stack, in order: (category, file needles); the first that any compiler
#: frame matches wins (``user_tracing`` also matches any stack with traced user code)
_COMPILER_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("guard_building", ("torch/_dynamo/guards.py",)),
    ("cpp_triton_compile", _CPP_TRITON),
    ("inductor_codegen", ("torch/_inductor/",)),
    ("aot_autograd", ("torch/_functorch/",)),
    ("fake_tensor", _FAKE),
    ("user_tracing", _TRACING),
)
_TRACING_RULE = len(_COMPILER_RULES) - 1


def classify(
    stack: Stack, functions: Sequence[FunctionRef], final_attempt: int | None, parametrized_frame: bool = False
) -> str:
    """The category of one stack; ``final_attempt`` is the frame's last attempt index and
    ``parametrized_frame`` whether parametrized properties were traced in that frame."""
    if final_attempt is not None and 0 <= stack.attempt < final_attempt:  # -1: attempt unknown
        return "restarts"
    traced = [functions[i] for i in stack.traced]
    if any(is_parametrization(f) for f in traced):
        return "parametrization"
    compiler = [functions[i] for i in stack.compiler]
    if not traced and parametrized_frame and _resolves_property(compiler):
        return "parametrization"
    for cat, needles in _COMPILER_RULES[:_TRACING_RULE]:
        if _any_in(compiler, needles):
            return cat
    if traced or _any_in(compiler, _TRACING):
        return "user_tracing"
    return "other"


def _rule_rank(f: FunctionRef) -> int:
    """Index of the first compiler rule this function matches on its own (len if none): a stack
    matches rule k when any of its frames does, so its first rule is the smallest rank."""
    path = _path(f)
    for k, (_cat, needles) in enumerate(_COMPILER_RULES):
        if any(n in path for n in needles):
            return k
    return len(_COMPILER_RULES)


def _classify_all(
    stacks: Sequence[Stack], functions: Sequence[FunctionRef], finals: dict[str, int], parametrized: set[str]
) -> list[str]:
    """``classify`` of every stack, with each function's rule matches worked out once (a big
    session has millions of frames on its stacks but a few thousand distinct functions)."""
    ranks = [_rule_rank(f) for f in functions]
    param = [is_parametrization(f) for f in functions]
    none = len(_COMPILER_RULES)
    names = [cat for cat, _ in _COMPILER_RULES[:_TRACING_RULE]]
    rank_of = ranks.__getitem__
    out: list[str] = []
    append = out.append
    for st in stacks:
        frame = st.frame
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
        r = min(map(rank_of, compiler), default=none)
        if r < _TRACING_RULE:
            append(names[r])
        elif traced or r == _TRACING_RULE:
            append("user_tracing")
        else:
            append("other")
    return out


def final_attempts(session: Session) -> dict[str, int]:
    return {f.key: f.restarts for f in session.frames}


_CACHE: list[tuple[object, object, tuple[object, ...], list[str]]] = []


def stack_categories(session: Session) -> list[str]:
    """Category of each stack in ``session.samples.stacks`` (same order).

    Every renderer needs this; the last result is kept while the same stack and function lists
    (held here, so their identity cannot be reused) and the per-frame facts the rules read (final
    attempt, parametrized properties) stay the same."""
    if session.samples is None:
        return []
    stacks = session.samples.stacks
    sig = (
        len(stacks),
        len(session.functions),
        tuple((f.key, f.restarts, any(p.parametrized for p in f.properties)) for f in session.frames),
    )
    if _CACHE and _CACHE[0][0] is stacks and _CACHE[0][1] is session.functions and _CACHE[0][2] == sig:
        return _CACHE[0][3]
    finals = final_attempts(session)
    parametrized = {f.key for f in session.frames if any(p.parametrized for p in f.properties)}
    cats = _classify_all(stacks, session.functions, finals, parametrized)
    _CACHE[:] = [(stacks, session.functions, sig, cats)]
    return cats


def empty_attribution() -> dict[str, float]:
    return dict.fromkeys(CATEGORIES, 0.0)


def attribute(session: Session) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Seconds per category for the run and for each frame key (all categories present)."""
    run = empty_attribution()
    per_frame: dict[str, dict[str, float]] = {f.key: empty_attribution() for f in session.frames}
    if session.samples is None:
        return run, per_frame
    for st, cat in zip(session.samples.stacks, stack_categories(session), strict=True):
        run[cat] += st.seconds
        if st.frame is not None and st.frame in per_frame:
            per_frame[st.frame][cat] += st.seconds
    return run, per_frame


def apply_attribution(session: Session) -> None:
    """Store the attribution in the session (run level and per frame)."""
    if session.samples is None:
        session.attribution = {}
        for f in session.frames:
            f.attribution = {}
        return
    run, per_frame = attribute(session)
    session.attribution = {k: round(v, 6) for k, v in run.items()}
    for f in session.frames:
        f.attribution = {k: round(v, 6) for k, v in per_frame[f.key].items()}


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
