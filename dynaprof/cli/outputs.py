"""The rendering options on the command line, and what is said once a run folder is written
(the folder itself is written by ``run_folder.writer``)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from dynaprof.cli.common import display_path, info_next_steps, summary_width
from dynaprof.errors import DynaprofError
from dynaprof.pipeline import info
from dynaprof.render.base import EXPORT_MODES, RUN_FOLDER_OPTIONS, RenderOptions

#: the rendering options' defaults, which the command line's are
_DEFAULTS = RUN_FOLDER_OPTIONS

#: the rendering options that are a share of the total: flag (its RenderOptions field) and help
_FRACTIONS = (
    ("--min-width", "flamegraph: prune frames narrower than this share of the total"),
    ("--node-threshold", "call graph: hide nodes below this share of total time"),
    ("--edge-threshold", "call graph: hide edges below this share of total time"),
)


def add_render_options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    added: list[argparse.Action] = []  # argparse's Action objects: option strings, dest, default
    g = p.add_argument_group("rendering")
    for flag, what in _FRACTIONS:
        default = getattr(_DEFAULTS, flag[2:].replace("-", "_"))
        added.append(g.add_argument(flag, type=float, default=default, metavar="FRACTION",
                                    help=f"{what} (default {default:g})"))
    added.append(g.add_argument("--icicle", action="store_true", help="flamegraph: draw the root at the top"))
    added.append(g.add_argument("--collapse-torch", action="store_true", help="call graph: one node per torch module"))
    added.append(g.add_argument(
        "--graph-nodes",
        type=int,
        default=_DEFAULTS.max_graph_nodes,
        metavar="N",
        help=f"call graph: at most N nodes, the heaviest (default {_DEFAULTS.max_graph_nodes}; Graphviz is slow "
        "above a few hundred)",
    ))
    added.append(
        g.add_argument("--max-rows", type=int, default=_DEFAULTS.max_rows, metavar="N",
                       help="rows shown in tables before eliding")
    )
    added.append(g.add_argument(
        "--exports",
        choices=EXPORT_MODES,
        default=_DEFAULTS.exports,
        help="folded stacks and speedscope.json: gzip-compressed (speedscope opens the .gz), plain text, "
        "none, or auto (default: gzip, without the compiler view's folded stacks of a session of over a "
        "million sampled frames)",
    ))
    return added


def render_options(args: argparse.Namespace) -> RenderOptions:
    for name in ("min_width", "node_threshold", "edge_threshold"):
        v = getattr(args, name)
        if not 0 <= v < 1:
            raise DynaprofError(f"--{name.replace('_', '-')} must be a fraction in [0, 1), got {v}")
    if args.max_rows < 1:
        raise DynaprofError(f"--max-rows must be at least 1, got {args.max_rows}")
    graph_nodes = getattr(args, "graph_nodes", _DEFAULTS.max_graph_nodes)
    if graph_nodes < 1:
        raise DynaprofError(f"--graph-nodes must be at least 1, got {graph_nodes}")
    return RenderOptions(
        min_width=args.min_width,
        icicle=args.icicle,
        node_threshold=args.node_threshold,
        edge_threshold=args.edge_threshold,
        collapse_torch=args.collapse_torch,
        max_graph_nodes=graph_nodes,
        max_rows=args.max_rows,
        exports=getattr(args, "exports", _DEFAULTS.exports),
    )


def print_written(out_dir: Path, written: list[Path], notes: list[str]) -> None:
    """One short line for what was written (the main files, then a count), the notes, and how
    to open and re-render it."""
    names = {str(p.relative_to(out_dir)).split("/")[0] + ("/" if "/" in str(p.relative_to(out_dir)) else "")
             for p in written}
    main = [n for n in ("session.json", "report.html", "summary.md") if n in names]
    rest = len(names) - len(main)
    listed = ", ".join(main) + (f" and {rest} more" if rest and main else f"{rest} files" if rest else "")
    info(f"dynaprof: wrote {display_path(out_dir)}/: {listed}")
    width = summary_width()
    for n in notes:  # wrapped to the terminal like the summary's own notes (paths are never split)
        info("\n".join(textwrap.wrap(n, width, initial_indent="  note: ", subsequent_indent="      ",
                                      break_long_words=False, break_on_hyphens=False)))
    report = out_dir / "report.html"
    info_next_steps(report if report in written else None, out_dir)
    sys.stderr.flush()
