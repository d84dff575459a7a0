"""cProfile statistics: merge them and reshape them so that snakeviz can draw them (pure: the
``.prof`` files are read by ``ingest.prof_files`` and written by ``run_folder.write_prof``).

A *table* is pstats' raw form (``pstats.Stats(...).stats``, what ``cProfile.Profile.dump_stats``
marshals): ``(file, line, func) -> (primitive calls, calls, tottime, cumtime, callers)`` where
``callers`` maps a caller's key to the edge ``(calls, primitive calls, tottime, cumtime)``; note the
edge tuple starts with *total* calls (as cProfile writes it), the node tuple with primitive calls.

snakeviz 2.2.2 builds its icicle by expanding the caller->callee graph into a tree, down to the
chosen depth, cutting a branch only when the *same* function is already on the path. Dynamo's
tracer is one large recursion (``run -> step -> ... -> inline_call_ -> run``: 1,500 functions in one
strongly connected component for the seed case), so the number of distinct paths explodes: the
whole-process profile of the seed case makes the worker build a JSON string longer than V8 allows
(``RangeError: Invalid string length``: "An error occurred processing your profile"), and even a
compile-window profile explodes as soon as one re-roots on ``_compile`` at depth 20.
``reshape_for_snakeviz`` keeps what is under the compile entry points, drops the caller edges that
close recursion cycles (a depth-first search from the roots that follows the heaviest edges first,
so the outermost, heaviest path stays intact) and drops edges too small to be drawn; the result is
a DAG that snakeviz draws at its defaults. ``snakeviz_hierarchy_size`` replays snakeviz's tree
expansion so the shape can be checked without a browser.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from dynaprof.model.pstats_table import FuncKey as FuncKey  # the table types, for its users
from dynaprof.model.pstats_table import PStatsTable as PStatsTable

#: Where Dynamo starts compiling a frame, outermost first; a compile window's profile is rooted at
#: the first one present (torch's own TORCH_COMPILE_CPROFILE profiles start at ``_compile_inner``).
COMPILE_ENTRY_POINTS: tuple[tuple[str, str], ...] = (
    ("torch/_dynamo/convert_frame.py", "_compile"),
    ("torch/_dynamo/convert_frame.py", "_compile_inner"),
)

#: The synthetic root that joins several compile entry points (snakeviz draws one root).
SYNTHETIC_ROOT: FuncKey = ("~", 0, "<dynaprof: compile windows>")

#: snakeviz 2.2.2's initial view: depth 10, cutoff 1/1000 (relative to the parent's time).
SNAKEVIZ_DEFAULT_DEPTH = 10
SNAKEVIZ_DEFAULT_CUTOFF = 0.001
#: largest tree (nodes) we accept for the default view; the seed case needs ~100 after reshaping,
#: ~8,000 for the raw compile window re-rooted on _compile, >3 million for the whole process.
SNAKEVIZ_NODE_BUDGET = 50_000


def func_label(key: FuncKey) -> str:
    """pstats' own spelling: ``file:line(func)``."""
    return f"{key[0]}:{key[1]}({key[2]})"


def table_bytes(table: PStatsTable) -> bytes:
    """The table in the marshal format ``cProfile.Profile.dump_stats`` writes (sorted for
    deterministic bytes); ``pstats.Stats`` and snakeviz read it."""
    ordered = {k: (*table[k][:4], dict(sorted(table[k][4].items()))) for k in sorted(table)}
    return marshal.dumps(ordered)


def _add(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def merge_tables(tables: Iterable[PStatsTable]) -> PStatsTable:
    """Sum several tables (as ``pstats.Stats.add`` does): node and edge counts and times add up."""
    out: PStatsTable = {}
    for table in tables:
        for key, (cc, nc, tt, ct, callers) in table.items():
            if key in out:
                prev = out[key]
                merged = dict(prev[4])
                for ck, edge in callers.items():
                    merged[ck] = _add(merged[ck], edge) if ck in merged else tuple(edge)
                out[key] = (*_add(prev[:4], (cc, nc, tt, ct)), merged)
            else:
                out[key] = (cc, nc, tt, ct, {ck: tuple(e) for ck, e in callers.items()})
    return out


def total_time(table: PStatsTable) -> float:
    """pstats' total: the sum of self times."""
    return float(sum(v[2] for v in table.values()))


def callees(table: PStatsTable) -> dict[FuncKey, dict[FuncKey, tuple[Any, ...]]]:
    """caller -> {callee: edge}, the inverse of the callers stored in the table."""
    out: dict[FuncKey, dict[FuncKey, tuple[Any, ...]]] = {}
    for key, value in table.items():
        for caller, edge in value[4].items():
            out.setdefault(caller, {})[key] = edge
    return out


def natural_roots(table: PStatsTable) -> list[FuncKey]:
    """Functions nobody in the table called (the profiler's own ``disable`` left out)."""
    called = set(table)
    called_by_someone = {k for k, v in table.items() if any(c in table for c in v[4])}
    return sorted(k for k in called - called_by_someone if not _profiler_cruft(k))


def _profiler_cruft(key: FuncKey) -> bool:
    return key[0] == "~" and "_lsprof.Profiler" in key[2]


def compile_roots(table: PStatsTable) -> list[FuncKey]:
    """The outermost Dynamo compile entry point present in ``table`` (``convert_frame._compile``)."""
    for f, name in COMPILE_ENTRY_POINTS:
        found = sorted(k for k in table if k[2] == name and k[0].replace("\\", "/").endswith(f))
        if found:
            return found
    return []


def restrict(table: PStatsTable, roots: Sequence[FuncKey]) -> PStatsTable:
    """The part of ``table`` reachable from ``roots``. Callers outside it are dropped and each
    function's counts and times are recomputed from the calls that remain (exact for a
    compile-window profile; for a whole-process profile the time of a function also called
    outside compiles is capped at its recorded cumulative time)."""
    down = callees(table)
    seen = set(roots)
    todo = list(roots)
    while todo:
        for child in down.get(todo.pop(), {}):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    out: PStatsTable = {}
    root_set = set(roots)
    for key in seen:
        cc, nc, tt, ct, callers = table[key]
        if key in root_set:
            out[key] = (cc, nc, tt, ct, {})
            continue
        kept = {c: e for c, e in callers.items() if c in seen}
        if len(kept) != len(callers):
            enc, ecc, ett, ect = (sum(e[i] for e in kept.values()) for i in range(4))
            cc, nc, tt, ct = min(ecc, cc), min(enc, nc), min(ett, tt), min(ect, ct)
        out[key] = (cc, nc, tt, ct, kept)
    return out


def break_cycles(table: PStatsTable, roots: Sequence[FuncKey], min_edge_s: float = 0.0) -> PStatsTable:
    """Drop the caller edges that close a recursion cycle, and edges under ``min_edge_s``.

    Depth-first search from ``roots`` following the heaviest edge first; an edge to a function
    still on the search path closes a cycle and is dropped. Functions no longer reachable go too;
    function totals are kept as recorded (snakeviz reads per-edge times below the root)."""
    down = callees(table)
    kept: dict[FuncKey, dict[FuncKey, tuple[Any, ...]]] = {}
    state: dict[FuncKey, int] = {}  # 1 on the path, 2 done
    for root in roots:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, _ordered_children(down.get(root, {}), min_edge_s))]
        while stack:
            node, children = stack[-1]
            if not children:
                state[node] = 2
                stack.pop()
                continue
            child, edge = children.pop()
            if state.get(child) == 1:
                continue  # closes a cycle
            kept.setdefault(child, {})[node] = edge
            if child not in state:
                state[child] = 1
                stack.append((child, _ordered_children(down.get(child, {}), min_edge_s)))
    root_set = set(roots)
    return {k: (*table[k][:4], {} if k in root_set else kept.get(k, {})) for k in state}


def _ordered_children(children: dict[FuncKey, tuple[Any, ...]], min_edge_s: float) -> list[tuple[FuncKey, Any]]:
    # popped from the end: lightest first in the list, so the heaviest edge is explored first
    big = [(k, e) for k, e in children.items() if e[3] >= min_edge_s]
    return sorted(big, key=lambda ke: (ke[1][3], ke[0]))  # ties: the key decides, deterministically


def reshape_for_snakeviz(
    table: PStatsTable,
    roots: Sequence[FuncKey] | None = None,
    min_fraction: float = 0.001,
    node_budget: int = SNAKEVIZ_NODE_BUDGET,
) -> PStatsTable:
    """A table snakeviz 2.2.2 draws at its default view (depth 10, cutoff 1/1000).

    1. restrict to what runs under the compile entry points (``roots``; default: Dynamo's
       ``convert_frame._compile`` when present, else the table's own roots);
    2. join several roots under one synthetic root ``<dynaprof: compile windows>``;
    3. drop caller edges that close recursion cycles and edges under ``min_fraction`` of the total
       (narrower than a pixel in the icicle); if snakeviz's tree would still exceed
       ``node_budget`` nodes, ``min_fraction`` is doubled until it fits.
    """
    if not table:
        return {}
    chosen = list(roots) if roots is not None else (compile_roots(table) or natural_roots(table))
    chosen = [r for r in chosen if r in table]
    if not chosen:
        chosen = sorted(table, key=lambda k: (-table[k][3], k))[:1]
    part = restrict(table, chosen)
    if len(chosen) > 1:
        part = dict(part)
        for r in chosen:
            cc, nc, tt, ct, _ = part[r]
            part[r] = (cc, nc, tt, ct, {SYNTHETIC_ROOT: (nc, cc, tt, ct)})
        part[SYNTHETIC_ROOT] = (1, 1, 0.0, sum(part[r][3] for r in chosen), {})
        chosen = [SYNTHETIC_ROOT]
    total = float(sum(part[r][3] for r in chosen))
    fraction = min_fraction
    while True:
        shaped = break_cycles(part, chosen, fraction * total)
        size = snakeviz_hierarchy_size(shaped, limit=node_budget + 1)
        if size <= node_budget or fraction >= 0.5:
            return shaped
        fraction = max(fraction * 2, 1e-4)


def snakeviz_hierarchy_size(
    table: PStatsTable,
    depth: int = SNAKEVIZ_DEFAULT_DEPTH,
    cutoff: float = SNAKEVIZ_DEFAULT_CUTOFF,
    root: FuncKey | None = None,
    limit: int = 10_000_000,
) -> int:
    """How many nodes snakeviz's worker (``sv_build_hierarchy``) builds for ``root`` (default: the
    root snakeviz picks); stops counting past ``limit``."""
    down = callees(table)
    if root is None:
        root = snakeviz_root(table)
        if root is None:
            return 0
    count = 0
    # (node, depth, node_time, path set)
    todo: list[tuple[FuncKey, int, float, frozenset[FuncKey]]] = [(root, 0, float(table[root][3]), frozenset([root]))]
    while todo and count <= limit:
        node, d, node_time, path = todo.pop()
        count += 1
        kids = down.get(node, {})
        if d >= depth or not kids:
            continue
        children = {k: float(table[k][4][node][3]) for k in kids if k not in path}
        tot = sum(children.values())
        if tot > node_time > 0:
            children = {k: t * node_time / tot for k, t in children.items()}
        for k, t in children.items():
            if node_time > 0 and t / node_time > cutoff:
                todo.append((k, d + 1, t, path | {k}))
        if tot < node_time:
            count += 1  # the "self time" filler block
    return count


def snakeviz_root(table: PStatsTable) -> FuncKey | None:
    """The root snakeviz draws first: a function that calls something and is never called
    (largest cumulative time), like ``sv_find_root``."""
    down = callees(table)
    # snakeviz drops functions that neither call nor are called ("profiler cruft")
    live = [k for k in table if k in down or any(c in table for c in table[k][4])]
    called = {k for k in live if any(c in table for c in table[k][4])}
    candidates = [k for k in live if k not in called] or live
    if not candidates:
        return None
    return max(sorted(candidates), key=lambda k: table[k][3])


def snakeviz_path(prof: str | Path) -> Path:
    """Where the snakeviz-ready copy of ``prof`` goes: ``run.prof`` -> ``run.snakeviz.prof``."""
    p = Path(prof)
    stem = p.name[: -len(".prof")] if p.name.endswith(".prof") else p.name
    return p.with_name(stem + ".snakeviz.prof")


#: the snakeviz-ready profile of a run, in its run folder
RUN_SNAKEVIZ_PROFILE = "cprofile/run.snakeviz.prof"


def snakeviz_bytes(table: PStatsTable) -> bytes:
    """``table`` reshaped for snakeviz (``reshape_for_snakeviz``), as ``.prof`` bytes: the one
    way every snakeviz profile is made (the renderer, ``dynaprof view --snakeviz``, this module)."""
    return table_bytes(reshape_for_snakeviz(table))
