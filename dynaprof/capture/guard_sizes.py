"""How big a compiled frame's guards are: the C++ guard tree's shape, and the printed guard code's
size and where its guards come from. Read from the ``guard_manager`` of the ``GuardedCode`` that
Dynamo's compile entry returns (``recorder.CompileRecorder._end``): the tree at once, the costly
printout after the run, so neither inflates compile time."""

from __future__ import annotations

import re
from typing import Any

from dynaprof.model.journal import GuardSizes

#: a printed guard's source comment: ``# <expr>  # <file>:<line> in <function>``
_GUARD_SOURCE = re.compile(r"#\s*(?:[^#]*?#\s*)?([^\s#][^#]*?):(\d+) in ([\w<>.]+)\s*$")


def guard_tree_stats(gm: Any) -> GuardSizes:
    """Leaves, managers and depth of the C++ guard tree (~15 ms for the seed's 1,300 managers)."""
    stats: GuardSizes = {}
    root = getattr(gm, "root", None)
    if root is not None and hasattr(root, "get_leaf_guards"):
        # keyed by id() but holding the objects: pybind hands out the same wrapper for a shared
        # (relational) guard, which is what must be counted once; a freed wrapper's id could be
        # reused by the next one and undercount the rest
        leaves: dict[int, Any] = {}
        managers = 0
        depth = 0
        todo: list[tuple[Any, int]] = [(root, 0)]  # depth: levels below the root
        while todo:
            mgr, d = todo.pop()
            managers += 1
            depth = max(depth, d)
            for leaf in mgr.get_leaf_guards():
                leaves[id(leaf)] = leaf
            children = list(mgr.get_child_managers())
            if hasattr(mgr, "get_key_value_managers"):
                for pair in mgr.get_key_value_managers().values():
                    children.extend(x for x in pair if x is not None)
            todo.extend((c, d + 1) for c in children)
        if hasattr(root, "get_epilogue_lambda_guards"):
            leaves.update((id(g), g) for g in root.get_epilogue_lambda_guards())
        stats["tree_leaf_count"], stats["tree_manager_count"], stats["tree_depth"] = len(leaves), managers, depth
    return stats


def guard_text_stats(gm: Any) -> GuardSizes:
    """Size of the printed guard code and where its guards come from (printing it is the costly
    part: ~15 ms and 0.8 MB for the seed)."""
    stats: GuardSizes = {}
    try:
        text = str(gm)
    except Exception:
        text = ""
    if text and not text.startswith("<"):
        lines = text.splitlines()
        stats["code_text_chars"], stats["code_text_lines"] = len(text), len(lines)
        sources: dict[str, int] = {}
        for line in lines:
            m = _GUARD_SOURCE.search(line)
            if m:
                src = f"{m.group(1).strip()}:{m.group(3)}"
                sources[src] = sources.get(src, 0) + 1
        stats["sources"] = dict(sorted(sources.items(), key=lambda kv: -kv[1])[:40])
    return stats

