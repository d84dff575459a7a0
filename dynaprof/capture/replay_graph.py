"""A compiled graph as data, for the Inductor replay (``capture.replay``): described in the profiled
process, rebuilt with its parametrizations folded in the replay process.

``describe`` runs at Inductor's hand-off (``hooks.replay_graphs``) on a graph Dynamo has already
built: it reads the nodes' ops, targets and arguments, each node's ``stack_trace`` and
``nn_module_stack`` (the provenance ``node_causes`` reads) and each tensor's shape, stride, dtype,
device and ``requires_grad``, never a value. A target is kept by the name it is reached by (a
module in ``sys.modules`` and attributes from there: nothing is imported in the profiled process),
checked to lead back to the same object. A dynamic graph's symbolic sizes are kept at their hints
(the sizes of the run), so the replay lowers it specialized to them (``dynamic`` says so). What it
cannot describe (a submodule call, a constant held on the graph module, an unnamed function) makes
the graph unreplayable, with the reason.

``rebuild`` (replay process only) makes an FX graph again and folds the parametrizations as
dynaprof's remedy does (``hooks.unparametrize``): a node a parametrization added (``node_causes``'
rule) whose value other code uses becomes a graph input of the same shape, stride and dtype;
what only fed it falls away. The result is what Dynamo hands Inductor for the folded model.
"""

from __future__ import annotations

import builtins
import math
import sys
from typing import Any

from dynaprof.capture import node_causes
from dynaprof.model.journal import GraphNode, ReplayGraph, TensorMeta

#: node ops a description keeps; ``call_module`` and ``get_attr`` hold state the replay has not got
_OPS = ("placeholder", "call_function", "call_method", "output")


class Unreplayable(Exception):
    """A graph the replay cannot rebuild; the message says why (reported, never guessed around)."""


# -- targets ---------------------------------------------------------------------------------------


#: op namespaces torch itself defines: their ops exist in any process that imports torch
TORCH_NAMESPACES = ("aten", "prims", "quantized", "_quantized", "inductor", "higher_order", "debugprims", "rngprims")


def defining_module(target: Any) -> str | None:
    """The module that registered a custom op (``torch.library.custom_op``), which the replay
    imports so the op exists there too; None for torch's own ops or where it is not known."""
    name = str(target)  # "transformers.grouped_mm_fallback.default"
    ns, _, rest = name.partition(".")
    if type(target).__name__ not in ("OpOverload", "OpOverloadPacket") or ns in TORCH_NAMESPACES:
        return None
    try:
        from dynaprof.capture.torch_private import _private

        opdef = _private("torch._library.custom_ops").OPDEFS[f"{ns}::{rest.split('.')[0]}"]
        module = getattr(getattr(opdef, "_init_fn", None), "__module__", None)
    except Exception:
        return None
    return module if isinstance(module, str) else None


def target_name(target: Any) -> str:
    """The dotted name ``target`` is reached by from an imported module, checked both ways."""
    if isinstance(target, str):
        return target
    op = type(target).__name__
    if op in ("OpOverload", "OpOverloadPacket"):
        name = "torch.ops." + str(target)
    else:
        module = getattr(target, "__module__", None) or "builtins"
        if module == "torch._ops.aten":
            module = "torch.ops.aten"
        short = getattr(target, "__name__", None)
        name = f"{module}.{short}"
        if not short or resolve(name, imported_only=True) is not target:
            name = f"{module}.{getattr(target, '__qualname__', '?')}"
    if resolve(name, imported_only=True) is not target:
        raise Unreplayable(f"no importable name for {target!r}")
    return name


def resolve(name: str, imported_only: bool = False) -> Any:
    """The object ``name`` is reached by; None when it is not there (``imported_only``: from the
    modules already imported, importing nothing)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        mod_name = ".".join(parts[:i])
        module = sys.modules.get(mod_name)
        if module is None and not imported_only:
            try:
                module = __import__(mod_name, fromlist=["_"])
            except Exception:
                module = None
        if module is None:
            continue
        obj: Any = module
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return getattr(builtins, name, None)


# -- values ----------------------------------------------------------------------------------------


def _encode(value: Any) -> Any:
    """An argument as JSON: nodes by name, torch's enums by name, containers kept."""
    import torch

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, torch.fx.Node):
        return {"node": value.name}
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
        return {"torch": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, slice):
        return {"slice": [_encode(value.start), _encode(value.stop), _encode(value.step)]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, (tuple, list)):  # torch.Size is a tuple
        return {"tuple" if isinstance(value, tuple) else "list": [_encode(v) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: _encode(v) for k, v in value.items()}}
    raise Unreplayable(f"an argument of type {type(value).__name__}")


def _decode(value: Any, env: dict[str, Any]) -> Any:
    import torch

    if not isinstance(value, dict):
        return value
    if "node" in value:
        return env[value["node"]]
    if "torch" in value:
        return getattr(torch, value["torch"])
    if "device" in value:
        return torch.device(value["device"])
    if "float" in value:
        return float(value["float"])
    if "slice" in value:
        return slice(*(_decode(v, env) for v in value["slice"]))
    if "ellipsis" in value:
        return Ellipsis
    if "tuple" in value:
        return tuple(_decode(v, env) for v in value["tuple"])
    if "list" in value:
        return [_decode(v, env) for v in value["list"]]
    if "dict" in value:
        return {k: _decode(v, env) for k, v in value["dict"].items()}
    raise Unreplayable(f"an argument the replay does not know: {sorted(value)}")


def hint(value: Any) -> int:
    """An int, or a symbolic size's hint (the value it had in the run): the replay lowers a dynamic
    graph at those sizes. Reading the hint adds no guard. Raises Unreplayable without one."""
    if type(value) is int:
        return value
    got = getattr(getattr(value, "node", None), "hint", None)
    if type(got) is int:
        return got
    raise Unreplayable("a symbolic size without a hint")


def is_symbolic(value: Any) -> bool:
    return type(value).__name__ in ("SymInt", "SymFloat", "SymBool")


def tensor_meta(value: Any) -> TensorMeta | None:
    """Shape, stride, dtype, device and requires_grad of a tensor, symbolic sizes at their hints;
    None for anything else."""
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    shape, stride = [hint(x) for x in value.shape], [hint(x) for x in value.stride()]
    return {"shape": shape, "stride": stride, "dtype": str(value.dtype).removeprefix("torch."),
            "device": str(value.device), "grad": bool(value.requires_grad)}  # fmt: skip


def _module_stack(meta: dict[str, Any]) -> list[list[str]] | None:
    stack = meta.get("nn_module_stack")
    if not isinstance(stack, dict):
        return None
    out = []
    for key, entry in stack.items():
        if isinstance(entry, (tuple, list)) and len(entry) > 1 and isinstance(entry[0], str):
            cls = entry[1]
            cls = f"{cls.__module__}.{cls.__qualname__}" if isinstance(cls, type) else str(cls)
            out.append([str(key), entry[0], cls])
    return out


# -- the profiled process's side -----------------------------------------------------------------


def has_parametrization(gm: Any) -> bool:
    """Whether a node of ``gm`` was added by a parametrization (``node_causes``' rule)."""
    for node in gm.graph.nodes:
        key = node_causes.node_cause(node) if node.op == "call_function" or node.op == "call_method" else None
        if key is not None and key[3] == node_causes.CAUSE_PARAMETRIZATION:
            return True
    return False


def calls_parametrized_module(gm: Any) -> bool:
    """Whether ``gm`` reaches a module whose class ``nn.utils.parametrize`` made (torch 2.4 puts each
    parametrized module in the graph whole, its ``forward`` one op: no node is a parametrization's)."""
    for node in gm.graph.nodes:
        if node.op in ("get_attr", "call_module"):
            try:
                sub = gm.get_submodule(str(node.target))
            except Exception:  # a parameter or buffer, not a module
                continue
            if type(sub).__module__ == "torch.nn.utils.parametrize":
                return True
    return False


def describe(gm: Any, example_inputs: Any, key: str) -> ReplayGraph:
    """The record of one graph (see the module docstring). Raises Unreplayable."""
    import torch

    traces: list[str] = []
    trace_ids: dict[str, int] = {}
    nodes: list[GraphNode] = []
    imports: set[str] = set()
    inputs = list(example_inputs)
    placeholder = 0
    dynamic = False
    for node in gm.graph.nodes:
        if node.op not in _OPS:
            raise Unreplayable(f"a {node.op} node ({node.target})")
        rec: GraphNode = {"name": node.name, "op": node.op}
        if node.op == "placeholder":
            value = inputs[placeholder] if placeholder < len(inputs) else node.meta.get("example_value")
            placeholder += 1
            meta = tensor_meta(value)
            if meta is not None:
                rec["tensor"] = meta
                dynamic = dynamic or any(is_symbolic(x) for x in (*value.shape, *value.stride()))
            elif is_symbolic(value) and type(value).__name__ == "SymInt":
                rec["value"], dynamic = hint(value), True
            elif isinstance(value, (int, float, bool)):
                rec["value"] = value
            else:
                raise Unreplayable(f"an input of type {type(value).__name__}")
        else:
            rec["target"] = target_name(node.target) if node.op != "output" else "output"
            if (module := defining_module(node.target)) is not None:
                imports.add(module)
            rec["args"] = _encode(node.args)
            rec["kwargs"] = _encode(node.kwargs)
            val = node.meta.get("example_value")
            meta = tensor_meta(val) if isinstance(val, torch.Tensor) else None
            if meta is not None:
                rec["tensor"] = meta
        trace = node.meta.get("stack_trace")
        if isinstance(trace, str) and trace:
            if trace not in trace_ids:
                trace_ids[trace] = len(traces)
                traces.append(trace)
            rec["trace"] = trace_ids[trace]
        mods = _module_stack(node.meta)
        if mods:
            rec["modules"] = mods
        nodes.append(rec)
    rec_graph: ReplayGraph = {"t": "replay_graph", "key": key, "grad": torch.is_grad_enabled(), "traces": traces,
                              "nodes": nodes}  # fmt: skip
    if dynamic:
        rec_graph["dynamic"] = True
    if imports:
        rec_graph["imports"] = sorted(imports)
    return rec_graph


# -- the replay process's side ---------------------------------------------------------------------


def _meta_of(rec: GraphNode, traces: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if "trace" in rec and 0 <= rec["trace"] < len(traces):
        meta["stack_trace"] = traces[rec["trace"]]
    if rec.get("modules"):
        meta["nn_module_stack"] = {k: (path, cls) for k, path, cls in rec["modules"]}
    return meta


def _is_param(rec: GraphNode, traces: list[str]) -> bool:
    if rec["op"] not in ("call_function", "call_method"):
        return False

    class _Node:  # node_causes reads only ``meta``
        meta = _meta_of(rec, traces)

    key = node_causes.node_cause(_Node())
    return key is not None and key[3] == node_causes.CAUSE_PARAMETRIZATION


def folded_records(graph: ReplayGraph) -> tuple[list[GraphNode], int]:
    """The graph's nodes with each parametrization output other code uses made an input, and
    what fed only them left out; and how many outputs were folded. Raises Unreplayable."""
    nodes, traces = graph["nodes"], graph["traces"]
    param = {n["name"] for n in nodes if _is_param(n, traces)}
    users: dict[str, set[str]] = {}
    for n in nodes:
        for used in _names_in(n.get("args")) | _names_in(n.get("kwargs")):
            users.setdefault(used, set()).add(n["name"])
    folded = [n for n in nodes if n["name"] in param and any(u not in param for u in users.get(n["name"], ()))]
    for n in folded:
        if "tensor" not in n:
            raise Unreplayable(f"a parametrization's output without a tensor value ({n['name']})")
    kept = {n["name"] for n in folded}
    # what is left: every non-parametrization node, and inputs some kept node still reads
    body = [n for n in nodes if n["op"] != "placeholder" and n["name"] not in param]
    needed: set[str] = set()
    for n in body:
        needed |= _names_in(n.get("args")) | _names_in(n.get("kwargs"))
    inputs = [n for n in nodes if n["op"] == "placeholder" and (n["name"] in needed or n["name"] not in users)]
    made: list[GraphNode] = [{"name": n["name"], "op": "placeholder", "tensor": n["tensor"]} for n in folded]
    return [*inputs, *made, *body], len(kept)


def _names_in(value: Any) -> set[str]:
    if isinstance(value, dict):
        if "node" in value and len(value) == 1:
            return {value["node"]}
        out: set[str] = set()
        for v in value.values():
            out |= _names_in(v)
        return out
    if isinstance(value, list):
        out = set()
        for v in value:
            out |= _names_in(v)
        return out
    return set()


def rebuild(records: list[GraphNode], traces: list[str]) -> tuple[Any, list[Any]]:
    """An FX graph module of ``records`` and inputs for it (uninitialised tensors of each
    placeholder's shape, stride and dtype). Raises Unreplayable."""
    import torch

    graph = torch.fx.Graph()
    env: dict[str, Any] = {}
    inputs: list[Any] = []
    for rec in records:
        op = rec["op"]
        if op == "placeholder":
            node = graph.placeholder(rec["name"])
            meta = rec.get("tensor")
            if meta is not None:
                value: Any = torch.empty_strided(meta["shape"], meta["stride"], dtype=getattr(torch, meta["dtype"]),
                                                 device=meta["device"], requires_grad=meta["grad"])  # fmt: skip
            else:
                value = rec.get("value")
            inputs.append(value)
        elif op == "output":
            node = graph.output(_decode(rec["args"], env)[0])
        else:
            target: Any = rec["target"] if op == "call_method" else resolve(rec["target"])
            if target is None:
                raise Unreplayable(f"no {rec['target']} in this process")
            node = graph.create_node(op, target, _decode(rec["args"], env), _decode(rec["kwargs"], env), rec["name"])
        node.meta.update(_meta_of(rec, traces))
        env[rec["name"]] = node
    graph.lint()
    return torch.fx.GraphModule(torch.nn.Module(), graph), inputs
