"""Which user code an FX node (and so the compiler work on it) is for.

AOT autograd and Inductor work node by node. Dynamo records on every node it creates where in the
user's code it came from: ``meta["stack_trace"]`` (the user frames, outermost first) and
``meta["nn_module_stack"]`` (the modules it was inside). AOT autograd copies both onto the nodes it
derives, and Inductor keeps the FX nodes a buffer or kernel came from (``origins``). From those a
node's *cause* is one of:

* a parametrization: the stack passes through ``torch/nn/utils/parametrize.py``; named by property
  and parametrization class (``Linear.weight via Parametrization``), read from the module path
  ``...seq.0.parametrizations.weight.0``;
* user code: the innermost frame in a file outside torch (``forward (model.py:26)``);
* none (no provenance): neither is there (a node torch made for the whole graph, or an exporter
  that keeps no stacks).

Causes are ``FunctionKey`` tuples ``(label, file, line, kind)`` with ``kind`` one of
``CAUSE_KINDS``, so they travel in the same function table as the stacks. Runs in hooks, on the
compiling thread: never in a signal handler.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, NamedTuple

from dynaprof.capture.stacks import FunctionKey
from dynaprof.model.cause_labels import FUSED_WITH
from dynaprof.model.session import PARAMETRIZE_FILE
from dynaprof.model.torch_files import torch_file

CAUSE_PARAMETRIZATION = "cause:parametrization"
CAUSE_USER = "cause:user"
CAUSE_MIXED = "cause:mixed"
CAUSE_UNKNOWN = "cause:unknown"
CAUSE_KINDS = (CAUSE_PARAMETRIZATION, CAUSE_USER, CAUSE_MIXED, CAUSE_UNKNOWN)
UNKNOWN: FunctionKey = ("unknown (no provenance)", "", 0, CAUSE_UNKNOWN)

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_PARAM_PATH = re.compile(r"^(.*)\.parametrizations\.([A-Za-z_][\w]*)\.(\d+)$")


def _class_name(entry: Any) -> str:
    """The class in an ``nn_module_stack`` value: a type, or its qualified name as a string."""
    cls = entry[1] if isinstance(entry, (tuple, list)) and len(entry) > 1 else None
    if isinstance(cls, type):
        name = cls.__name__
    elif isinstance(cls, str):
        name = cls.rsplit(".", 1)[-1]
    else:
        return "?"
    if name.startswith("Parametrized") and len(name) > len("Parametrized"):
        name = name[len("Parametrized") :]  # ParametrizedLinear -> Linear, the user's class
    return name


def _module_paths(meta: dict[str, Any]) -> list[tuple[str, str]]:
    stack = meta.get("nn_module_stack")
    if not isinstance(stack, dict):
        return []
    out = []
    for entry in stack.values():
        if isinstance(entry, (tuple, list)) and entry and isinstance(entry[0], str):
            out.append((entry[0], _class_name(entry)))
    return out


def _user_frame(stack_trace: str) -> tuple[str, int, str] | None:
    """The innermost frame of the stack trace in a file outside torch."""
    found = None
    for m in _FRAME.finditer(stack_trace):
        if torch_file(m.group(1)) or m.group(1).startswith("<"):
            continue
        found = (m.group(1), int(m.group(2)), m.group(3))
    return found


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def node_cause(node: Any) -> FunctionKey | None:
    """The cause of one FX node, or None when it carries no provenance."""
    meta = getattr(node, "meta", None)
    if not isinstance(meta, dict):
        return None
    trace = meta.get("stack_trace")
    trace = trace if isinstance(trace, str) else ""
    paths = _module_paths(meta)
    if PARAMETRIZE_FILE in trace.replace("\\", "/") or any(".parametrizations." in p for p, _ in paths):
        by_path = dict(paths)
        for path, cls in reversed(paths):
            m = _PARAM_PATH.match(path)
            if m:
                owner = by_path.get(m.group(1), "?")
                frame = _user_frame(trace)
                file, line = (frame[0], frame[1]) if frame else ("", 0)
                return (f"{owner}.{m.group(2)} via {cls}", file, line, CAUSE_PARAMETRIZATION)
        frame = _user_frame(trace)
        if frame is not None:
            return (f"parametrization at {_basename(frame[0])}:{frame[1]}", frame[0], frame[1], CAUSE_PARAMETRIZATION)
        return ("parametrization", "", 0, CAUSE_PARAMETRIZATION)
    frame = _user_frame(trace)
    if frame is None:
        return None
    return (f"{frame[2]} ({_basename(frame[0])}:{frame[1]})", frame[0], frame[1], CAUSE_USER)


def combine(causes: Iterable[FunctionKey]) -> FunctionKey:
    """One cause for work done for several nodes at once (a fused kernel, a batch of kernels).

    ``causes`` are single nodes' causes, one per node (never an earlier ``combine``'s result: the
    caller keeps the parts, so labels never nest). A kernel made only of nodes a parametrization
    added is the parametrization's: without it the kernel would not exist. A kernel that fuses a
    parametrization's nodes into user code's is the user code's: without the parametrization it
    would still be built (a kernel's build time is mostly its fixed cost, measured in
    docs/causes.md), so the parametrization's nodes are left out of its cause. Work for several
    user lines goes to the line that owns most of its nodes (ties: the first in file order), so a
    cause is always one place a user can act on, never a list. Nodes without provenance beside
    known ones add nothing."""
    counts = Counter(causes)
    known = [c for c in counts if c[3] != CAUSE_UNKNOWN]
    distinct = sorted(known or counts)
    if not distinct:
        return UNKNOWN
    if len(distinct) == 1:
        return distinct[0]
    params = [c for c in distinct if c[3] == CAUSE_PARAMETRIZATION]
    users = [c for c in distinct if c[3] != CAUSE_PARAMETRIZATION]
    if users:
        return min(users, key=lambda c: (-counts[c], c))
    props = sorted({c[0].split(" via ", 1)[0] for c in params})
    via = sorted({c[0].split(" via ", 1)[1] for c in params if " via " in c[0]})
    label = _first(props, 4, ", ", " and")
    if via:
        label += " via " + ", ".join(via[:3])
    return (label, params[0][1], params[0][2], CAUSE_PARAMETRIZATION)


class KernelParts(NamedTuple):
    """One kernel's origin nodes by cause: how many there are (distinct FX nodes), how many a
    parametrization added, the cause ids of those and of the others (-1: none), and the distinct
    user causes among the others (what a counterfactual run's kernels are matched by)."""

    nodes: int
    param_nodes: int
    param: int
    rest: int
    users: tuple[int, ...] = ()


def split_parts(keys: list[FunctionKey]) -> tuple[FunctionKey | None, FunctionKey | None]:
    """(the parametrization's part, the rest) of a kernel whose nodes have causes ``keys``.

    A kernel of one side has that side's cause (``combine``'s, the other None). A kernel that fuses
    a parametrization's nodes into other code's has both: the assembler splits its build between
    them by what the parametrization's nodes add to it. The parametrization's part is labelled
    with the code it is fused into (the one with the most nodes), so a reader sees where."""
    params = [k for k in keys if k[3] == CAUSE_PARAMETRIZATION]
    others = [k for k in keys if k[3] not in (CAUSE_PARAMETRIZATION, CAUSE_UNKNOWN)]
    if not params or not others:
        return (combine(keys), None) if params else (None, combine(keys) if keys else None)
    param = combine(params)
    counts: dict[FunctionKey, int] = {}
    for k in others:
        counts[k] = counts.get(k, 0) + 1
    ranked = sorted(counts, key=lambda k: (-counts[k], k))
    more = f" and {len(ranked) - 1} more" if len(ranked) > 1 else ""
    fused = (f"{param[0]}{FUSED_WITH}{ranked[0][0]}{more}", param[1], param[2], CAUSE_PARAMETRIZATION)
    return fused, combine(others)


def _first(names: list[str], n: int, sep: str, more: str) -> str:
    """The first ``n`` names joined, and how many more there are."""
    return sep.join(names[:n]) + (f"{more} {len(names) - n} more" if len(names) > n else "")


def fx_nodes_of(scheduled: Iterable[Any]) -> list[Any]:
    """The FX nodes Inductor scheduler nodes (or node-schedule entries) were made from."""
    out: list[Any] = []
    for item in scheduled:
        get_nodes = getattr(item, "get_nodes", None)
        if get_nodes is None:
            continue  # markers in a node schedule (EnableReduction, ...)
        try:
            for snode in get_nodes():
                ir_node = getattr(snode, "node", None)
                origins = getattr(ir_node, "origins", None) or ()
                out.extend(origins)
        except Exception:
            continue
    return out
