"""``dynaprof report PATH``: re-render every output from saved data, without re-running.

PATH may be a run folder (or its session.json), a run folder whose dynaprof process died
before saving (only its journal is there), or a TORCH_TRACE log file or folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dynaprof import pipeline
from dynaprof.cli import ranks_support
from dynaprof.cli.common import summary_width
from dynaprof.cli.outputs import add_render_options, print_written, render_options
from dynaprof.cli.sessions import load_any
from dynaprof.model.session import Session
from dynaprof.model.store import SESSION_FILE
from dynaprof.pipeline import info
from dynaprof.run_folder.location import default_run_dir, prepare_out_dir

#: renderers that draw only samples or cProfile data (and import networkx): skipped when there is none
_SAMPLE_RENDERERS = ("callgraph", "snakeviz_profile")


def renderers_for(session: Session) -> list[str] | None:
    """The renderers worth running (None: all). A session without samples or cProfile data, such as
    an imported TORCH_TRACE log, gets no call graph either way; skipping those renderers skips their
    imports (networkx: about a third of ``dynaprof report``'s time on a small log)."""
    if session.samples is not None or session.artifacts.get("cprofile") or any(f.cprofile for f in session.frames):
        return None
    from dynaprof.render.registry import RENDERERS

    return [name for name in RENDERERS if name not in _SAMPLE_RENDERERS]


class ReportCommand:
    name = "report"
    help = "re-render every output of a saved run (or import a TORCH_TRACE log)"
    description = (
        "Writes session.json, the summary, reports, flamegraphs, call graph and timeline for PATH: "
        "a dynaprof run folder or session.json (re-rendered in place unless -o; its session.json is "
        "rewritten only if it changed), or a TORCH_TRACE log file/folder (imported; written under "
        "./dynaprof-runs/ unless -o)."
    )

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("path", type=Path, metavar="PATH")
        p.add_argument("-o", "--output", type=Path, metavar="DIR", help="write here instead")
        p.add_argument("--force", action="store_true", help="write into an existing non-empty DIR")
        p.add_argument("--strict", action="store_true",
                       help="TORCH_TRACE import: exit 2 on what tlparse --strict rejects (a line that is not a "
                            "record, invalid JSON, a payload md5 mismatch, truncation)")
        p.add_argument("--rank", type=int, metavar="N",
                       help="a folder of per-rank TORCH_TRACE logs: import rank N only (default: every rank "
                            "into the multi-rank view)")
        p.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
        add_render_options(p)

    def run(self, args: argparse.Namespace) -> int:
        options = render_options(args)
        if ranks_support.is_multi_rank_dir(args.path):  # DIR/rank-N/ folders of a torchrun job
            return ranks_support.report_multi_rank(args.path, options, args.output, args.force, args.quiet)
        if args.rank is None and ranks_support.is_rank_trace_dir(args.path):  # per-rank TORCH_TRACE logs
            return ranks_support.report_trace_ranks(args.path, options, args.output, args.force, args.quiet,
                                                    args.strict)
        session, source_dir, imported = load_any(args.path, args.strict, args.rank)
        if args.output is not None:
            out_dir = prepare_out_dir(args.output, args.force)
        elif imported:
            out_dir = prepare_out_dir(default_run_dir(args.path.resolve().name.split(".")[0] or "trace"), False)
        else:
            out_dir = source_dir
        # re-rendered in place from its own session.json: that file is rewritten only if it changes
        loaded = args.path / SESSION_FILE if args.path.is_dir() else args.path
        stored = (not imported and loaded.name == SESSION_FILE and loaded.is_file()
                  and loaded.resolve() == (out_dir / SESSION_FILE).resolve())
        written, notes = pipeline.write(session, out_dir, options, run_dir=source_dir, only=renderers_for(session),
                                        say=info, stored=stored)
        if not args.quiet:
            from dynaprof.render.terminal import summary_text

            sys.stderr.write(summary_text(session, options.max_rows, summary_width(), screen=True))
            print_written(out_dir, written, notes)
        return 0


COMMAND = ReportCommand()
