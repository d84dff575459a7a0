"""Call graphs seen from analysis: functions as nodes, caller->callee edges, from cProfile data or samples.

From cProfile (exact counts): a node's inclusive time is pstats' cumulative time, its self time
the tottime, its calls ``primitive/total``; an edge carries the calls and the cumulative time of
the callee when called from that caller. From samples (no cProfile): the real compiler stacks
(``Stack.compiler``) give inclusive time (seconds of the stacks containing the node, counted once
per stack), self time (stacks where it is the leaf) and edges (adjacent frames); call counts are
unknown (``None``).

Every node gets the phase group of a one-frame stack of its function (``analysis.causes``; traced
user functions are Dynamo tracing), and the path that leads to parametrization property tracing is
marked (``param_path`` on nodes and edges, ``parametrization`` on the nodes where it
happens): from samples, the exact compiler paths of the stacks attributed to ``parametrization``,
down to ``resolve_data_descriptor``/``tp_descr_get_impl``; from cProfile (no locals), the
signature ``resolve_data_descriptor`` calling ``tp_descr_get_impl``, when the session confirms
parametrized properties were traced, with the shortest (then heaviest) path from the root to it.
Pruning follows gprof2dot: nodes under ``node_threshold`` and edges under ``edge_threshold`` of
the total are dropped, and the graph remembers how many there were.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from dynaprof import fmt
from dynaprof.analysis.attribution import PARAMETRIZATION_COLOUR
from dynaprof.analysis.causes import (
    is_parametrization,
    property_signature_step,
    stack_phase,
    tables,
)
from dynaprof.analysis.derived import Derived
from dynaprof.analysis.interpreter_frames import INLINED_KIND, INLINED_KINDS, INLINED_PROPERTY_KIND
from dynaprof.analysis.pstats_tools import FuncKey, PStatsTable, total_time
from dynaprof.analysis.stacks import COLOUR_ORDER
from dynaprof.model.session import CAUSE_PARAMETRIZATION, GROUP_OF, PARAMETRIZE_FILE, FunctionRef, Session, Stack
from dynaprof.model.torch_files import torch_file


@dataclass
class CallGraph:
    graph: nx.DiGraph  # pruned
    source: str  # "cprofile" | "samples"
    total_s: float
    nodes_total: int  # before pruning
    edges_total: int
    node_threshold: float
    edge_threshold: float
    collapsed: bool


def function_category(f: FunctionRef) -> str:
    """The colour key of one function on its own, as the flamegraphs colour it: parametrization
    machinery is ``parametrization``, any other traced user function Dynamo tracing, a compiler
    function the phase group of a one-frame stack of it."""
    if is_parametrization(f):
        return PARAMETRIZATION_COLOUR
    if f.kind in ("traced", "property"):
        return GROUP_OF["dynamo_tracing"]
    probe = Stack(frame=None, attempt=0, thread=0, compiler=[0], traced=[], samples=0, seconds=0.0)
    return GROUP_OF[stack_phase(probe, tables([f]))]


def torch_module(filename: str) -> str | None:
    """``.../site-packages/torch/_dynamo/variables/builder.py`` -> ``torch._dynamo.variables.builder``;
    None for anything outside torch."""
    path = filename.replace("\\", "/")
    if not path.endswith(".py"):
        return None
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            path = path[path.rindex(marker) + len(marker) :]
            break
    else:
        if not torch_file(path):
            return path[:-3].replace("/", ".") if path.startswith("torch/") else None
        path = path[path.rindex("/torch/") + 1 :]
    if not path.startswith("torch/"):
        return None
    mod = path[:-3]
    if mod.endswith("/__init__"):
        mod = mod[: -len("/__init__")]
    return mod.replace("/", ".")


def _short(filename: str) -> str:
    """``torch/_dynamo/guards.py``, ``inspect.py``: without site-packages or the stdlib's folder."""
    if filename == "~":
        return "built-in"
    return fmt.package_path(filename.replace("\\", "/"), stdlib=True)


def _is_signature(filename: str, name: str) -> bool:
    return property_signature_step(filename, name) is not None


#: user-call frames are classified as the traced code they stand for
_TRACED_KIND = {INLINED_KIND: "traced", INLINED_PROPERTY_KIND: "property"}

Grouper = Callable[[str, str, int], tuple[str, str, str, int | None]]


def _grouper(collapse: bool) -> Grouper:
    """(file, name, line) -> (node id, display name, location, line)."""

    def group(filename: str, name: str, lineno: int) -> tuple[str, str, str, int | None]:
        if collapse:
            mod = torch_module(filename)
            if mod is not None:
                return mod, mod, _short(filename), None
        return f"{filename}:{lineno}({name})", name, _short(filename), lineno

    return group


def _add_node(g: nx.DiGraph, node: str, name: str, location: str, lineno: int | None, category: str) -> None:
    if node not in g:
        g.add_node(
            node,
            name=name,
            location=location,
            lineno=lineno,
            category=category,
            inclusive_s=0.0,
            self_s=0.0,
            calls=None,
            primitive_calls=None,
            members=0,
            parametrization=False,
            param_path=False,
        )
    elif g.nodes[node]["category"] != category:  # a module mixes colours: parametrization, else the first phase
        cur = g.nodes[node]["category"]
        g.nodes[node]["category"] = min(cur, category, key=COLOUR_ORDER.index)
    g.nodes[node]["members"] += 1


def graph_from_pstats(table: PStatsTable, collapse: bool = False, parametrized: bool = True) -> nx.DiGraph:
    """The unpruned call graph of a pstats table. ``parametrized``: whether the session confirms
    parametrized properties were traced (cProfile cannot tell a parametrization property from
    another @property)."""
    group = _grouper(collapse)
    g = nx.DiGraph()
    gid: dict[FuncKey, str] = {}
    for key in sorted(table):
        filename, lineno, name = key
        node, disp, loc, line = group(filename, name, lineno)
        gid[key] = node
        _add_node(g, node, disp, loc, line, function_category(FunctionRef(name, filename, lineno)))
    entering: dict[str, list[int]] = {}  # node -> [calls, primitive calls] from other nodes
    #: a merged module's inclusive time: its largest member's (a lower bound; cProfile has no stacks)
    merged_incl: dict[str, float] = {}
    for key in sorted(table):
        cc, nc, tt, ct, callers = table[key]
        node = gid[key]
        attrs = g.nodes[node]
        attrs["self_s"] += float(tt)
        merged_incl[node] = max(merged_incl.get(node, 0.0), float(ct))
        if attrs["members"] == 1:
            attrs.update(inclusive_s=float(ct), calls=int(nc), primitive_calls=int(cc))
        outside = [(c, e) for c, e in sorted(callers.items()) if c in gid and gid[c] != node]
        acc = entering.setdefault(node, [0, 0])
        if not any(c in gid for c in callers):  # a root member: all of its calls enter the group
            acc[0] += int(nc)
            acc[1] += int(cc)
        for caller, edge in outside:
            acc[0] += int(edge[0])
            acc[1] += int(edge[1])
            u = gid[caller]
            if g.has_edge(u, node):
                d = g.edges[u, node]
                d["calls"] += int(edge[0])
                d["seconds"] += float(edge[3])
            else:
                g.add_edge(u, node, calls=int(edge[0]), seconds=float(edge[3]), param_path=False)
    for node, attrs in g.nodes.items():
        if attrs["members"] > 1:  # merged module: calls entering it from outside
            calls, prim = entering.get(node, [0, 0])
            attrs.update(inclusive_s=merged_incl.get(node, 0.0), calls=calls, primitive_calls=prim)
    if collapse:  # recursion makes summed edge times overcount: an edge carries at most its callee's time
        for _u, v, d in g.edges(data=True):
            d["seconds"] = min(d["seconds"], g.nodes[v]["inclusive_s"])
    if parametrized:
        targets = []
        for key in sorted(table):
            if _is_signature(key[0], key[2]) and key[2] == "resolve_data_descriptor":
                down = [k for k, v in table.items() if key in v[4] and _is_signature(k[0], k[2])]
                if down:  # resolve_data_descriptor calling tp_descr_get_impl
                    targets.append(gid[key])
                    for k in down:
                        g.nodes[gid[k]]["parametrization"] = True
                        g.nodes[gid[k]]["param_path"] = True
                        if g.has_edge(gid[key], gid[k]):
                            g.edges[gid[key], gid[k]]["param_path"] = True
        _mark_paths_from_root(g, targets)
    for n in g:
        if g.nodes[n]["parametrization"]:
            g.nodes[n]["category"] = PARAMETRIZATION_COLOUR
    return g


def _mark_paths_from_root(g: nx.DiGraph, targets: Iterable[str]) -> None:
    """Mark, for each target, the widest path from a root: the one whose smallest edge time is
    largest (the path that carries the time; fewer hops, then names, break ties). A shortest path
    would wander through hubs like ``builtins.getattr`` that call back into Python."""
    if g.number_of_nodes() == 0:
        return
    top = max(sorted(g), key=lambda n: g.nodes[n]["inclusive_s"])  # collapsed modules may all be called
    roots = sorted({top, *(n for n in g if g.in_degree(n) == 0)})
    best: dict[str, tuple[float, int]] = {}
    parent: dict[str, str] = {}
    heap = [(-math.inf, 0, r) for r in roots]
    heapq.heapify(heap)
    done: set[str] = set()
    while heap:
        negw, hops, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v in sorted(g.successors(u)):
            if v in done:
                continue
            width = min(-negw, g.edges[u, v]["seconds"])
            cand = (width, -(hops + 1))
            if v not in best or cand > best[v]:
                best[v] = cand
                parent[v] = u
                heapq.heappush(heap, (-width, hops + 1, v))
    for t in targets:
        g.nodes[t]["parametrization"] = True
        node = t
        g.nodes[node]["param_path"] = True
        while node in parent:
            up = parent[node]
            g.edges[up, node]["param_path"] = True
            g.nodes[up]["param_path"] = True
            node = up


def graph_from_samples(
    session: Session,
    frame: str | None = None,
    collapse: bool = False,
    derived: Derived | None = None,
    user_calls: bool = True,
) -> nx.DiGraph:
    """The unpruned call graph of the sampled compiler stacks (of one frame key, or all).
    ``user_calls`` (default): Dynamo's interpreter replaced by the user functions it traces, as in the
    compiler flamegraph (``analysis.interpreter_frames``): one node per traced user function instead of the
    ``run -> step -> CALL -> ... -> inline_call_`` cycle every call goes round.

    Sums go into plain lists indexed by small integer node ids first and the networkx graph is
    built once at the end: a big session has hundreds of thousands of distinct stacks."""
    g = nx.DiGraph()
    if session.samples is None:
        return g
    group = _grouper(collapse)
    stacks = session.samples.stacks
    d = derived or Derived(session)
    cats = d.categories
    fns = session.functions
    paths: list[tuple[int, ...]] | None = None
    if user_calls:
        calls = d.user_calls
        paths = calls.paths
        fns = [FunctionRef(*k) for k in calls.keys]
    indices: Iterable[int] = range(len(stacks)) if frame is None else d.by_frame.get(frame, [])
    # node ids, in the order the old per-frame walk first met them (networkx keeps insertion order)
    names: list[str] = []
    nid_of_name: dict[str, int] = {}
    sig_fns: set[int] = set()

    def node_of(i: int) -> int:
        f = fns[i]
        node, disp, loc, line = group(f.filename, f.name, f.lineno)
        if f.kind in INLINED_KINDS:  # a traced user function, not the compiler's frame of that name
            node, disp = f"{node} [{f.kind}]", f"{disp} (property)" if f.kind == INLINED_PROPERTY_KIND else disp
        n = nid_of_name.get(node)
        if n is None:
            n = nid_of_name[node] = len(names)
            names.append(node)
        ref = FunctionRef(f.name, f.filename, f.lineno, _TRACED_KIND.get(f.kind, f.kind))
        category = function_category(ref)
        _add_node(g, node, disp, loc, line, category)
        if _is_signature(f.filename, f.name) or (
                f.kind == INLINED_PROPERTY_KIND and category == PARAMETRIZATION_COLOUR):
            sig_fns.add(i)
        return n

    fn_nid: list[int] = [-1] * len(fns)  # function index -> node id, once met
    met: set[int] = set()
    walked: list[int] = []  # the stacks with a compiler stack, in walk order
    for k in indices:  # node ids in walk order (networkx keeps the order nodes are added in)
        comp = stacks[k].compiler if paths is None else paths[k]
        if not comp:
            continue
        walked.append(k)
        if not met.issuperset(comp):  # functions seen for the first time, in walk order
            for i in comp:
                if i not in met:
                    met.add(i)
                    fn_nid[i] = node_of(i)
    comps: list[Sequence[int]] = [stacks[k].compiler if paths is None else paths[k] for k in walked]
    inclusive, self_s, edges = _sums(walked, comps, [stacks[k].seconds for k in walked], fn_nid, len(names), collapse)
    param_nodes, param_edges, marked = _parametrization_paths(
        [comp for k, comp in zip(walked, comps, strict=True) if cats[k] == "parametrization"], fn_nid, sig_fns, collapse
    )
    _store_sums(g, names, inclusive, self_s, param_nodes, marked)
    named = sorted(((names[u], names[v]), secs, (u, v) in param_edges) for (u, v), secs in edges.items())
    g.add_edges_from((u, v, {"calls": None, "seconds": secs, "param_path": p}) for (u, v), secs, p in named)
    return g


def _parametrization_paths(
    comps: list[Sequence[int]], fn_nid: list[int], sig_fns: set[int], collapse: bool
) -> tuple[set[int], set[tuple[int, int]], set[int]]:
    """The nodes and edges on the way to a parametrization (up to its signature function) of the
    parametrization's stacks ``comps`` (function indices), and the signature nodes marked."""
    param_nodes: set[int] = set()
    param_edges: set[tuple[int, int]] = set()
    marked: set[int] = set()
    nid = fn_nid.__getitem__
    for comp in comps:
        path = list(map(nid, comp))
        if collapse:  # adjacent frames of one module merge
            path = [n for n, prev in zip(path, [-1, *path], strict=False) if n != prev]
        signature_at = -1
        if sig_fns:
            for j, i in enumerate(comp):
                if i in sig_fns:
                    signature_at = j
            if signature_at >= 0 and collapse:  # its position once adjacent frames merged
                signature_at = _collapsed_index(comp, signature_at, fn_nid)
        end = signature_at if signature_at >= 0 else len(path) - 1
        for j in range(end + 1):
            param_nodes.add(path[j])
            if j and path[j - 1] != path[j]:
                param_edges.add((path[j - 1], path[j]))
        if signature_at >= 0:
            marked.add(path[signature_at])
    return param_nodes, param_edges, marked


def _store_sums(g: nx.DiGraph, names: list[str], inclusive: Sequence[float], self_s: Sequence[float],
                param_nodes: set[int], marked: set[int]) -> None:
    """Node ids' sums and marks onto the graph's nodes (by name)."""
    nodes = g.nodes
    for n, secs in enumerate(inclusive):
        if secs:
            nodes[names[n]]["inclusive_s"] += secs
    for n, secs in enumerate(self_s):
        if secs:
            nodes[names[n]]["self_s"] += secs
    for n in param_nodes:
        nodes[names[n]]["param_path"] = True
    for n in marked:
        nodes[names[n]]["parametrization"] = True
        nodes[names[n]]["category"] = PARAMETRIZATION_COLOUR


#: stacks summed per numpy pass: the arrays of one pass stay small (a few MB) whatever the session
_CHUNK = 8192


def _sums(
    walked: list[int], comps: list[Sequence[int]], seconds: list[float], fn_nid: list[int], n_nodes: int,
    collapse: bool,
) -> tuple[list[float], list[float], dict[tuple[int, int], float]]:
    """Each node's inclusive and self seconds and each edge's seconds over the stacks ``comps``
    (a node or an edge counts once per stack). Summed with numpy, stack by stack in order, one
    addition at a time (``np.add.at`` adds in index order, unbuffered): the same figures to the
    last bit as a loop over the stacks, which a million frames made the slowest part of a big
    report. A few thousand stacks a pass, so the arrays stay small."""
    import numpy as np

    inclusive = np.zeros(n_nodes, dtype=np.float64)
    self_s = np.zeros(n_nodes, dtype=np.float64)
    edge_ids: dict[int, int] = {}  # caller << b | callee -> index into edge_s
    edge_s = np.zeros(0, dtype=np.float64)
    b = np.int64(max(1, (n_nodes - 1).bit_length()))
    if _CHUNK.bit_length() + 2 * int(b) > 62:
        raise ValueError(f"too many call-graph nodes to pack ({n_nodes})")
    nid_of = np.asarray(fn_nid, dtype=np.int64)
    for start in range(0, len(comps), _CHUNK):
        part = comps[start:start + _CHUNK]
        lengths = np.fromiter(map(len, part), dtype=np.int64, count=len(part))
        flat = np.fromiter(itertools.chain.from_iterable(part), dtype=np.int64, count=int(lengths.sum()))
        node = nid_of[flat]
        sid = np.repeat(np.arange(len(part), dtype=np.int64), lengths)  # the stack, within this pass
        secs = np.asarray(seconds[start:start + _CHUNK], dtype=np.float64)
        if collapse:  # adjacent frames of one node merge
            keep = np.ones(len(node), dtype=bool)
            keep[1:] = (node[1:] != node[:-1]) | (sid[1:] != sid[:-1])
            node, sid = node[keep], sid[keep]
        if not len(node):
            continue
        once = _unique((sid << b) | node)  # sorted: stack by stack, each node once per stack
        np.add.at(inclusive, once & ((np.int64(1) << b) - 1), secs[once >> b])
        last = np.flatnonzero(np.r_[sid[1:] != sid[:-1], True])
        np.add.at(self_s, node[last], secs[sid[last]])
        same = (sid[1:] == sid[:-1]) & (node[1:] != node[:-1])
        pairs = _unique((sid[:-1][same] << (2 * b)) | (node[:-1][same] << b) | node[1:][same])  # once per stack
        if not len(pairs):
            continue
        edge = pairs & ((np.int64(1) << (2 * b)) - 1)
        distinct, at = _inverse(edge)
        new = [e for e in distinct.tolist() if e not in edge_ids]
        for e in new:
            edge_ids[e] = len(edge_ids)
        if new:
            edge_s = np.concatenate([edge_s, np.zeros(len(new), dtype=np.float64)])
        gid = np.fromiter((edge_ids[e] for e in distinct.tolist()), dtype=np.int64, count=len(distinct))
        np.add.at(edge_s, gid[at], secs[pairs >> (2 * b)])
    bits, mask = int(b), (1 << int(b)) - 1
    sums = edge_s.tolist()
    edges = {(e >> bits, e & mask): sums[i] for e, i in edge_ids.items()}
    return inclusive.tolist(), self_s.tolist(), edges


def _inverse(a: Any) -> tuple[Any, Any]:
    """``np.unique(a, return_inverse=True)`` by sorting (see ``_unique``). Equal values get the
    same index whatever their order, so the sort need not be stable (a stable one is 5x slower)."""
    import numpy as np

    order = np.argsort(a)
    ordered = a[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    at = np.empty(len(a), dtype=np.int64)
    at[order] = np.cumsum(first) - 1
    return ordered[first], at


def _unique(a: Any) -> Any:
    """The sorted distinct values of an int64 array (``np.unique`` hashes in numpy 2.3 and up: ten
    times slower than sorting on millions of keys)."""
    import numpy as np

    a = np.sort(a)
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def _collapsed_index(comp: Sequence[int], j: int, fn_nid: list[int]) -> int:
    """Where frame ``j`` of a compiler stack lands once adjacent frames of one node are merged."""
    out = -1
    prev = -1
    for i in comp[: j + 1]:
        n = fn_nid[i]
        if n != prev:
            out += 1
        prev = n
    return out


def prune(
    g: nx.DiGraph, total_s: float, node_threshold: float, edge_threshold: float, max_nodes: int | None = None
) -> nx.DiGraph:
    """Drop nodes under ``node_threshold`` and edges under ``edge_threshold`` of ``total_s``; with
    ``max_nodes``, keep at most that many (the heaviest): Graphviz needs minutes for thousands of
    nodes, and nobody reads such a graph."""
    keep = [n for n in g if g.nodes[n]["inclusive_s"] >= node_threshold * total_s]
    out = nx.DiGraph()
    out.graph.update(g.graph)
    if max_nodes is not None and len(keep) > max_nodes:
        keep = sorted(keep, key=lambda n: (-g.nodes[n]["inclusive_s"], n))[:max_nodes]
        out.graph["node_cap"] = max_nodes
    for n in sorted(keep):
        out.add_node(n, **g.nodes[n])
    for u, v in sorted(g.subgraph(keep).edges):
        d = g.edges[u, v]
        if d["seconds"] >= edge_threshold * total_s:
            out.add_edge(u, v, **d)
    return out


def parametrized_evidence(session: Session | None, table: PStatsTable | None = None, frame: str | None = None) -> bool:
    """Whether parametrized @properties were traced (session facts, samples, or parametrize.py
    functions in the cProfile data); without it, cProfile's property signature is not marked."""
    if session is not None:
        frames = [f for f in session.frames if frame is None or f.key == frame]
        if any(p.parametrized for f in frames for p in f.properties):
            return True
        if any(f.axes is not None and f.axes.causes.get(CAUSE_PARAMETRIZATION, 0.0) > 0 for f in frames):
            return True
    return table is not None and any(PARAMETRIZE_FILE in k[0].replace("\\", "/") for k in table)


def build_callgraph(
    session: Session | None,
    table: PStatsTable | None = None,
    frame: str | None = None,
    node_threshold: float = 0.005,
    edge_threshold: float = 0.001,
    collapse_torch: bool = False,
    max_nodes: int | None = None,
    derived: Derived | None = None,
) -> CallGraph | None:
    """The pruned call graph from ``table`` (cProfile) when given, else from the session's samples
    (of ``frame``, or all); None when there is neither."""
    if table:
        full = graph_from_pstats(table, collapse_torch, parametrized_evidence(session, table, frame))
        total = total_time(table)
        source = "cprofile"
    elif session is not None and session.samples is not None and session.samples.stacks:
        full = graph_from_samples(session, frame, collapse_torch, derived)
        total = sum(st.seconds for st in session.samples.stacks if (frame is None or st.frame == frame) and st.compiler)
        source = "samples"
    else:
        return None
    if full.number_of_nodes() == 0 or total <= 0:
        return None
    pruned = prune(full, total, node_threshold, edge_threshold, max_nodes)
    return CallGraph(
        pruned,
        source,
        total,
        full.number_of_nodes(),
        full.number_of_edges(),
        node_threshold,
        edge_threshold,
        collapse_torch,
    )


def param_path_nodes(g: nx.DiGraph) -> list[str]:
    return sorted(n for n in g if g.nodes[n]["param_path"])
