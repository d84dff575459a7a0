"""The renderer contract: a session in, files (as values) out; the CLI does the writing.

A renderer is a function ``(ctx: RenderContext) -> dict[str, str | bytes]`` mapping file names
relative to the run folder to their contents. Renderers never touch the disk or print; anything
they need beyond the session (cProfile statistics loaded from ``.prof`` files) comes in the
context. Registration is in ``dynaprof.render.registry``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dynaprof.model.session import Session

#: pstats' raw table: (file, line, func) -> (primitive calls, calls, tottime, cumtime, callers)
PStatsTable = dict[tuple[str, int, str], tuple[Any, ...]]

Files = dict[str, str | bytes]


@dataclass
class RenderOptions:
    #: flamegraph: frames narrower than this fraction of the total are pruned (and counted)
    min_width: float = 0.001
    icicle: bool = False
    #: call graph thresholds (fractions of total time), gprof2dot's defaults
    node_threshold: float = 0.005
    edge_threshold: float = 0.001
    collapse_torch: bool = False
    #: at most this many call graph nodes (the heaviest), whatever the thresholds leave
    max_graph_nodes: int = 200
    #: how many rows tables show before eliding the rest with a count
    max_rows: int = 25
    #: per compile id graphs (flamegraphs, speedscope profiles) for at most this many frames,
    #: the ones with the most sampled time
    max_frame_graphs: int = 30


@dataclass
class RenderContext:
    session: Session
    options: RenderOptions = field(default_factory=RenderOptions)
    #: cProfile statistics: "run" (merged) and per frame key, when the run used --cprofile
    cprofile: dict[str, PStatsTable] = field(default_factory=dict)
    #: whether Graphviz's `dot` may be run to turn DOT into SVG
    use_dot: bool = True
    #: warnings renderers want the user to see (e.g. "dot not found")
    notes: list[str] = field(default_factory=list)
    #: outputs one renderer made that another embeds (the HTML report inlines the flamegraphs
    #: and the call graph): made once per context, keyed by what they are
    memo: dict[Any, Any] = field(default_factory=dict)


Renderer = Callable[[RenderContext], Files]
