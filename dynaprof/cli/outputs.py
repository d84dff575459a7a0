"""Rendering a saved session into its run folder: shared by ``run`` and ``report``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from dynaprof.analysis.attribution import apply_attribution
from dynaprof.analysis.pstats_tools import load_table
from dynaprof.cli.common import display_path, info, write_files
from dynaprof.errors import DynaprofError
from dynaprof.model.session import Session
from dynaprof.model.store import save_session
from dynaprof.render.base import PStatsTable, RenderContext, RenderOptions
from dynaprof.render.registry import RENDERERS, get_renderer


def add_render_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("rendering")
    g.add_argument(
        "--min-width",
        type=float,
        default=0.001,
        metavar="FRACTION",
        help="flamegraph: prune frames narrower than this share of the total (default 0.001)",
    )
    g.add_argument("--icicle", action="store_true", help="flamegraph: draw the root at the top")
    g.add_argument(
        "--node-threshold",
        type=float,
        default=0.005,
        metavar="FRACTION",
        help="call graph: hide nodes below this share of total time (default 0.005)",
    )
    g.add_argument(
        "--edge-threshold",
        type=float,
        default=0.001,
        metavar="FRACTION",
        help="call graph: hide edges below this share of total time (default 0.001)",
    )
    g.add_argument("--collapse-torch", action="store_true", help="call graph: one node per torch module")
    g.add_argument("--max-rows", type=int, default=25, metavar="N", help="rows shown in tables before eliding")


def render_options(args: argparse.Namespace) -> RenderOptions:
    for name in ("min_width", "node_threshold", "edge_threshold"):
        v = getattr(args, name)
        if not 0 <= v < 1:
            raise DynaprofError(f"--{name.replace('_', '-')} must be a fraction in [0, 1), got {v}")
    if args.max_rows < 1:
        raise DynaprofError(f"--max-rows must be at least 1, got {args.max_rows}")
    return RenderOptions(
        min_width=args.min_width,
        icicle=args.icicle,
        node_threshold=args.node_threshold,
        edge_threshold=args.edge_threshold,
        collapse_torch=args.collapse_torch,
        max_rows=args.max_rows,
    )


def load_cprofile(session: Session, run_dir: Path) -> tuple[dict[str, PStatsTable], list[str]]:
    """The run's cProfile tables (merged as "run", and per frame key), read from its .prof files."""
    tables: dict[str, PStatsTable] = {}
    notes: list[str] = []
    wanted = {"run": session.artifacts.get("cprofile")}
    wanted.update({f.key: f.cprofile for f in session.frames if f.cprofile})
    for key, rel in wanted.items():
        if not rel:
            continue
        try:
            tables[key] = load_table(run_dir / rel)
        except DynaprofError as e:  # the rest of the outputs still render
            notes.append(e.message)
    return tables, notes


def render_outputs(
    session: Session, out_dir: Path, options: RenderOptions, run_dir: Path | None = None, only: list[str] | None = None
) -> tuple[list[Path], list[str]]:
    """Write session.json and every output; a failing renderer is reported, never fatal."""
    apply_attribution(session)  # derived data: always by the current rules
    written = [save_session(session, out_dir)]
    tables, notes = load_cprofile(session, run_dir or out_dir)
    ctx = RenderContext(session, options, cprofile=tables)
    for name in only or list(RENDERERS):
        started = time.perf_counter()
        try:
            files = get_renderer(name)(ctx)
        except DynaprofError:
            raise
        except Exception as e:  # a renderer bug must not cost the user their profile
            notes.append(
                f"could not render {name}: {type(e).__name__}: {e} (session.json is saved; please report this)"
            )
            continue
        written += write_files(out_dir, files)
        took = time.perf_counter() - started
        if took > 2.0:
            info(f"dynaprof: rendered {name} in {took:.1f} s")
    return written, notes + ctx.notes


def print_written(out_dir: Path, written: list[Path], notes: list[str]) -> None:
    names = sorted(
        {
            str(p.relative_to(out_dir)).split("/")[0] + ("/" if "/" in str(p.relative_to(out_dir)) else "")
            for p in written
        }
    )
    info(f"dynaprof: wrote {display_path(out_dir)}/")
    info("  " + "  ".join(names))
    for n in notes:
        info(f"  note: {n}")
    if (out_dir / "report.html") in written:
        info(f"  open {display_path(out_dir / 'report.html')} in a browser")
    info(f"  re-render with: dynaprof report {display_path(out_dir)}")
    sys.stderr.flush()
