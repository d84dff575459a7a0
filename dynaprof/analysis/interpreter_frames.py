"""Compiler stacks as the user calls Dynamo traced, its interpreter's frames replaced (``docs/flamegraphs.md``).

Dynamo traces an inlined user call by recursing through its own interpreter: ``run -> step ->
CALL -> _call -> call_function -> UserFunctionVariable.call_function -> inline_user_function_return
-> inline_call -> inline_call_ -> run``, about ten frames per user call, so a real stack is a tower
of the same frames and a flamegraph of it is 130 levels deep. Each sample also carries the user
functions being traced (``Stack.traced``, pushed by the hooks around the translator's ``run``),
which says where each inlined call's chain starts. The rule:

* the frames before the first translator ``run`` (Dynamo's compile entry) are kept;
* each translator ``run`` frame starts a chain: every frame from it to the next ``run`` becomes
  **one frame named for the user function it traces** (the i-th ``run`` is the i-th non-property
  entry of ``Stack.traced``); a traced ``@property`` between two user functions becomes its own
  frame (``Linear.bias (property)``) after its caller's;
* in the last chain (where the sample was taken), only the leading ``symbolic_convert.py`` frames
  (``run``, ``step``, the opcode handler, ``call_function``...) go; the frames after them, the
  ones doing the work (variable building, fake tensors, guards), stay as they are;
* pass-through frames (:data:`PASS_THROUGH`: Python's import machinery, the decorators around
  every fake-tensor dispatch) are left out, their self time going to their caller;
* a ``run`` without a traced entry (hooks missing) is named ``[inlined call]``; traced entries
  without a ``run`` (sampled as a call starts) follow the last one's frame.

The compiled frame's own code, where it is a library's wrapper that torch records the wrapped
model code for (``CompiledFrame.wrapped``), is named for that code, as ``model.session.display_name``
names the frame; other wrappers keep their names (nothing says what they wrap).

The user-call frames have kind ``inlined`` (``inlined property`` for a property) and the user function's
name, file and line. The attribution category of each sample is decided on the real stack, before
the replacement, so it changes the shape of the pictures, never the numbers. The folded-stack
and speedscope exports keep the real stacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dynaprof.analysis.keys import Key, KeyTable
from dynaprof.model.session import FunctionRef, Session

#: (name, filename, lineno, kind), as ``analysis.stacks.NodeKey``

INLINED_KIND = "inlined"
INLINED_PROPERTY_KIND = "inlined property"
INLINED_KINDS = frozenset({INLINED_KIND, INLINED_PROPERTY_KIND})
UNKNOWN_CALL = "[inlined call]"
INTERPRETER_FILE = "torch/_dynamo/symbolic_convert.py"


#: pass-through frames left out of the drawn stacks: (file suffix, function name; "" for any).
#: Python's import machinery (the ``<module>`` being imported stays), the decorators torch wraps
#: every fake-tensor dispatch in and the two entry frames of each fake dispatch (its
#: ``_cached_dispatch_impl`` / ``_dispatch_impl`` stay); their self time goes to their caller
PASS_THROUGH: tuple[tuple[str, str], ...] = (
    ("<frozen importlib._bootstrap>", ""),
    ("<frozen importlib._bootstrap_external>", ""),
    ("torch/_compile.py", "_disable_dynamo.<locals>.inner"),
    ("torch/_dynamo/eval_frame.py", "DisableContext.__call__.<locals>._fn"),
    ("torch/utils/_stats.py", "count.<locals>.wrapper"),
    ("torch/_subclasses/fake_tensor.py", "FakeTensorMode.__torch_dispatch__"),
    ("torch/_subclasses/fake_tensor.py", "FakeTensorMode.dispatch"),
    ("torch/_prims_common/wrappers.py", "out_wrapper.<locals>._out_wrapper.<locals>._fn"),
    ("torch/_utils_internal.py", "compile_time_strobelight_meta.<locals>.compile_time_strobelight_meta_inner"
                                 ".<locals>.wrapper_function"),
)


def is_pass_through(f: FunctionRef) -> bool:
    """A frame of :data:`PASS_THROUGH`."""
    path = _path(f)
    return f.kind == "python" and any(path.endswith(suffix) and name in ("", f.name) for suffix, name in PASS_THROUGH)


def _path(f: FunctionRef) -> str:
    return f.filename.replace("\\", "/")


def is_translator_run(f: FunctionRef) -> bool:
    """``InstructionTranslatorBase.run`` (any class's ``run`` in ``symbolic_convert.py``)."""
    return f.kind == "python" and _path(f).endswith(INTERPRETER_FILE) and f.name.rsplit(".", 1)[-1] == "run"


def is_interpreter(f: FunctionRef) -> bool:
    """A frame of Dynamo's bytecode interpreter loop (``symbolic_convert.py``)."""
    return f.kind == "python" and _path(f).endswith(INTERPRETER_FILE)


@dataclass(frozen=True)
class UserCallPaths:
    """Per stack of ``session.samples.stacks``: its compiler path as user calls (indices into ``keys``,
    root first; the session's functions come first, then the user-call frames)."""

    paths: list[tuple[int, ...]]
    keys: list[Key]


def user_call_path(
    compiler: Sequence[int],
    traced: Sequence[int],
    funcs: Sequence[FunctionRef],
    runs: Sequence[bool],
    interp: Sequence[bool],
    skip: Sequence[bool],
    call_id: dict[tuple[int, bool], int],
    unknown_id: int,
) -> tuple[int, ...]:
    """One compiler stack as user calls (see the module docstring). ``runs`` / ``interp``: per function
    index, :func:`is_translator_run` / :func:`is_interpreter`; ``call_id``: (traced function
    index, is property) -> the user-call frame's id; ``unknown_id``: the ``[inlined call]`` id;
    ``skip``: per function index, :func:`is_pass_through`."""
    if any(skip[i] for i in compiler):
        compiler = [i for i in compiler if not skip[i]]
    starts = [j for j, i in enumerate(compiler) if runs[i]]
    if not starts:
        return tuple(compiler)
    # the traced entries as (user function, properties traced after it, before the next one)
    groups: list[tuple[int, list[int]]] = []
    for i in traced:
        if funcs[i].kind == "property":
            if groups:
                groups[-1][1].append(i)
        else:
            groups.append((i, []))
    out = list(compiler[: starts[0]])
    last = len(starts) - 1
    for n, _start in enumerate(starts):
        if n < len(groups):
            user, props = groups[n]
            out.append(call_id[(user, False)])
            out.extend(call_id[(p, True)] for p in props)
        else:
            out.append(unknown_id)
        if n == last:
            # traced entries without a run of their own (pushed just before it started): innermost
            for user, props in groups[len(starts):]:
                out.append(call_id[(user, False)])
                out.extend(call_id[(p, True)] for p in props)
            j = starts[n]
            while j < len(compiler) and interp[compiler[j]]:
                j += 1
            out.extend(compiler[j:])
    return tuple(out)


def user_call_paths(session: Session) -> UserCallPaths:
    """Every sampled compiler stack as user calls (empty without samples). Pure; a render works it out
    once (``analysis.derived.Derived.user_calls``)."""
    funcs = session.functions
    table = KeyTable(funcs)
    keys, key_id = table.keys, table.id
    if session.samples is None:
        return UserCallPaths([], keys)
    runs = [is_translator_run(f) for f in funcs]
    interp = [is_interpreter(f) for f in funcs]
    skip = [is_pass_through(f) for f in funcs]

    class _Ids(dict[tuple[int, bool], int]):
        def __missing__(self, k: tuple[int, bool]) -> int:
            f = funcs[k[0]]
            v = self[k] = key_id((f.name, f.filename, f.lineno, INLINED_PROPERTY_KIND if k[1] else INLINED_KIND))
            return v

    ids = _Ids()
    # a compiled frame whose code is a library's wrapper (transformers' ``wrapper (generic.py)``)
    # is named for the model's code it wraps (``CompiledFrame.wrapped``, the model's display name)
    wrapped: dict[str, tuple[tuple[str, int], int]] = {}  # frame key -> (its code's file, line), its frame's id
    for cf in session.frames:
        if cf.wrapped is not None:
            w = cf.wrapped
            wrapped[cf.key] = ((cf.filename, cf.lineno), key_id((w.name, w.filename, w.lineno, INLINED_KIND)))
    unknown = -1
    paths: list[tuple[int, ...]] = []
    # a stack without a translator run or pass-through frame is its own path (set checks: C speed)
    run_set = {i for i, r in enumerate(runs) if r}
    skip_set = {i for i, k in enumerate(skip) if k}
    for st in session.samples.stacks:
        comp = st.compiler
        if run_set.isdisjoint(comp):
            path = (tuple(comp) if skip_set.isdisjoint(comp)
                    else user_call_path(comp, st.traced, funcs, runs, interp, skip, ids, unknown))
        else:
            if unknown < 0:
                unknown = key_id((UNKNOWN_CALL, "", 0, INLINED_KIND))
            path = user_call_path(comp, st.traced, funcs, runs, interp, skip, ids, unknown)
        wrap = wrapped.get(st.frame) if st.frame is not None else None
        if wrap is not None and st.traced:
            code = funcs[st.traced[0]]
            first = ids.get((st.traced[0], False))
            if (code.filename, code.lineno) == wrap[0] and first is not None and first in path:
                j = path.index(first)
                path = (*path[:j], wrap[1], *path[j + 1 :])
        paths.append(path)
    return UserCallPaths(paths, keys)
