"""The renderer contract: a session in, files (as values) out; the CLI does the writing.

A renderer is a function ``(ctx: RenderContext) -> dict[str, str | bytes]`` mapping file names
relative to the run folder to their contents. Renderers never touch the disk or print; anything
they need beyond the session (cProfile statistics loaded from ``.prof`` files) comes in the
context. Registration is in ``dynaprof.render.registry``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dynaprof.analysis.derived import Derived
from dynaprof.model.session import Session

#: pstats' raw table: (file, line, func) -> (primitive calls, calls, tottime, cumtime, callers)
PStatsTable = dict[tuple[str, int, str], tuple[Any, ...]]



class Deferred:
    """File content still being made in a background thread (compression, which releases the
    GIL, so it runs beside the other renderers); the writer waits for :meth:`result`."""

    def __init__(self, make: Callable[[], bytes]) -> None:
        self._value: bytes | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(make,), name="dynaprof-deferred", daemon=True)
        self._thread.start()

    def _run(self, make: Callable[[], bytes]) -> None:
        try:
            self._value = make()
        except BaseException as e:  # raised where the result is wanted
            self._error = e

    def result(self) -> bytes:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


Files = dict[str, str | bytes | Deferred]

#: ``--max-rows``'s default: the rows a table shows before eliding the rest with a count. Every
#: table takes its cap from ``RenderOptions.max_rows``, through one named rule per table, beside
#: the rows it lists: the frames, reasons, properties, ranks' divergences and compare's rows in the
#: terminal and Markdown show ``max_rows``; the cause table ``analysis.cause_table.cause_rows`` in
#: every output (at most ``CAUSE_ROWS``; the terminal ``screen_cause_rows``, which keeps the first
#: screen in 80x24); the sortable tables of the HTML pages, where everything is, ``page_rows``.
TABLE_ROWS = 25
#: an HTML page's sortable table lists this many times ``max_rows`` (2,000 rows by default)
PAGE_ROWS_PER_ROW = 80


def page_rows(max_rows: int = TABLE_ROWS) -> int:
    """The rows a sortable table of report.html, compare.html or ranks.html lists under
    ``--max-rows`` (report.html's traced functions, reasons and per-compile sections: a share of it)."""
    return max(1, max_rows) * PAGE_ROWS_PER_ROW

#: how the bulky sample exports (folded stacks, speedscope) are written: "auto" (gzip, but not the
#: compiler view's folded stacks of a huge session, the largest file by far), gzip-compressed
#: (``stacks-compiler.folded.gz``), as plain text, or not at all
EXPORT_MODES: tuple[str, ...] = ("auto", "gzip", "plain", "none")


@dataclass
class RenderOptions:
    #: flamegraph: frames narrower than this fraction of the total are pruned (and counted)
    min_width: float = 0.001
    icicle: bool = False
    #: call graph thresholds (fractions of total time), gprof2dot's defaults
    node_threshold: float = 0.005
    edge_threshold: float = 0.001
    collapse_torch: bool = False
    #: at most this many call graph nodes (the heaviest), whatever the thresholds leave: a graph
    #: that reads on one screen (``--graph-nodes`` for more)
    max_graph_nodes: int = 40
    #: how many rows tables show before eliding the rest with a count (``TABLE_ROWS``: each
    #: table's rule)
    max_rows: int = TABLE_ROWS
    #: per compile id graphs (flamegraphs, speedscope profiles) for at most this many frames,
    #: the ones with the most sampled time
    max_frame_graphs: int = 30
    #: folded stacks and speedscope.json: "plain" (here: renderers called as a library return
    #: text), "gzip" (``*.gz``, a tenth of the size), "auto" (the command line's default: gzip,
    #: leaving out ``stacks-compiler.folded.gz`` above ``auto_folded_max_frames``) or "none"
    exports: str = "plain"
    #: "auto" exports: the compiler view's folded stacks only up to this many sampled compiler
    #: frames (all stacks together; 28 MB compressed at 5.4 million, the seed case has 200,000)
    auto_folded_max_frames: int = 1_000_000


#: the rendering options of a run folder written for a user, and so every entry point's defaults
#: (``run``, ``report``, ``dynaprof.profile()``, the notebook, pytest): ``RenderOptions``' own, with
#: "auto" exports. ``dynaprof pr`` shows fewer rows (``cli.pr.PR_MAX_ROWS``);
#: ``tests/unit/test_option_defaults.py`` checks each entry point against these.
RUN_FOLDER_OPTIONS = RenderOptions(exports="auto")


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
    #: what several renderers derive from the session's samples (stack categories, the user-code
    #: view, stacks per frame), worked out once for this context
    derived: Derived = field(init=False, repr=False)
    #: the files this render made so far, and those of the renderers still to come that the
    #: reports link to (relative names; the writer keeps it up to date, ``registry.render_all`` too);
    #: None: not known (a renderer called on its own)
    made: set[str] | None = None

    def __post_init__(self) -> None:
        self.derived = Derived(self.session)


Renderer = Callable[[RenderContext], Files]
