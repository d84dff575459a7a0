"""``dynaprof pr RUN`` / ``dynaprof pr BASE NEW``: a pull-request comment with its pictures.

Writes ``pr/comment.md`` and the static pictures it shows inline (``render/pr_pictures.py``) into
``RUN/pr/`` (with two runs: ``NEW/pr/``; ``-o DIR`` elsewhere), then prints the one ``gh`` line
that posts it, and how to post it by hand.
"""

from __future__ import annotations

import argparse
import shlex
import textwrap
from pathlib import Path

from dynaprof.cli.common import display_path, write_files
from dynaprof.cli.compare import add_margin_option, margin_of
from dynaprof.errors import DynaprofError
from dynaprof.model.session import Session
from dynaprof.model.store import SESSION_FILE, load_session
from dynaprof.pipeline import info
from dynaprof.render.base import RenderContext, RenderOptions

#: a PR comment's tables show fewer rows than a run folder's (``RUN_FOLDER_OPTIONS.max_rows``): the
#: comment is read in a narrow column among the review's others, and links to the full report
PR_MAX_ROWS = 12

PR_DIR = "pr"


def _load(path: Path) -> tuple[Session, Path]:
    """A run's session and its folder (a run folder or its session.json)."""
    if not path.exists():
        raise DynaprofError(f"{path}: no such file or folder")
    folder = path.parent if path.is_file() else path
    if path.is_dir() and not (path / SESSION_FILE).exists():
        raise DynaprofError(f"{path}: not a dynaprof run folder (no {SESSION_FILE}; run `dynaprof report {path}` "
                            "first if it holds a journal or a TORCH_TRACE log)")
    return load_session(path), folder


def _ctx(session: Session, options: RenderOptions) -> RenderContext:
    from dynaprof.analysis.attribution import apply_attribution

    ctx = RenderContext(session, options)
    apply_attribution(session, ctx.derived.phases, ctx.derived.causes)  # as every render: by the current rules
    return ctx


def _prepare(out: Path) -> Path:
    if out.exists() and not out.is_dir():
        raise DynaprofError(f"{out} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DynaprofError(f"cannot create {out}: {e.strerror or e}") from e
    for old in out.glob("*.svg"):  # pictures of an earlier comment would be attached again
        old.unlink(missing_ok=True)
    return out


def post_lines(out: Path, written: list[Path], number: str) -> list[str]:
    """The ``gh`` line that posts the comment with its pictures, and the way by hand."""
    comment = out / "comment.md"
    pictures = sorted(p for p in written if p.suffix == ".svg")
    cmd = ["gh", "pr", "comment", number, "--body-file", display_path(comment)]
    for p in pictures:
        cmd += ["--attach", display_path(p)]
    names = ", ".join(p.name for p in pictures)
    notes = [
        "(GitHub CLI 2.99+ uploads the attached pictures and rewrites the comment's relative references to "
        "them; it needs push access to the repository and does not work on GitHub Enterprise Server)",
        f"by hand: paste {display_path(comment)} into the PR's comment box, then drag {names} into it and "
        "replace each ![...](name.svg) line with the link GitHub inserts for that file",
    ]
    lines = [f"  post it: {shlex.join(cmd)}"]  # one line: it is to be copied
    for note in notes:
        lines += textwrap.wrap(note, 100, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
    return lines


class PrCommand:
    name = "pr"
    help = "write a pull-request comment (Markdown + static pictures) for a run, or for BASE -> NEW"
    description = (
        "Writes RUN/pr/comment.md (GitHub-flavoured, under 65,536 characters) and the pictures it shows inline "
        "(static SVGs, 880 px wide, colours = compiler phases): the user-code flamegraph and the time per "
        "phase. With two runs (BASE NEW), the comment is the before/after comparison and goes to NEW/pr/. "
        "Prints the `gh pr comment` line that posts it."
    )

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("runs", type=Path, nargs="*", metavar="RUN", help="a run folder, or BASE NEW")
        p.add_argument("--base", type=Path, nargs="+", dest="base_runs", metavar="RUN",
                       help="several runs of the reference side, pooled as repeats (with --new, instead of BASE NEW)")
        p.add_argument("--new", type=Path, nargs="+", dest="new_runs", metavar="RUN",
                       help="several runs of the side compared with it (its first run's folder gets pr/)")
        p.add_argument("-o", "--output", type=Path, metavar="DIR", help="output folder (default: RUN/pr or NEW/pr)")
        p.add_argument("--number", default="N", metavar="PR", help="the pull request number for the gh line")
        p.add_argument("--max-rows", type=int, default=PR_MAX_ROWS, metavar="N",
                       help=f"rows shown in tables (default {PR_MAX_ROWS})")
        add_margin_option(p)

    def run(self, args: argparse.Namespace) -> int:
        pooled = bool(args.base_runs or args.new_runs)
        if pooled and (args.runs or not (args.base_runs and args.new_runs)):
            raise DynaprofError("give RUN, BASE NEW, or --base RUN... --new RUN... (several runs per side)")
        if not pooled and not 1 <= len(args.runs) <= 2:
            raise DynaprofError("give one run (dynaprof pr RUN) or two (dynaprof pr BASE NEW)")
        if args.max_rows < 1:
            raise DynaprofError(f"--max-rows must be at least 1, got {args.max_rows}")
        if not (args.number == "N" or args.number.isdigit()):
            raise DynaprofError(f"--number must be a pull request number, got {args.number!r}")
        margin = margin_of(args)
        # imported here: every other command starts without the renderers
        from dynaprof.analysis.compare import compare_sessions
        from dynaprof.render.pr_pictures import pr_compare_files, pr_files

        options = RenderOptions(max_rows=args.max_rows)
        if pooled:
            from dynaprof.analysis.repeats import pool

            sides = [[_load(p) for p in paths] for paths in (args.base_runs, args.new_runs)]
            loaded = [(pool([s for s, _ in side]), side[0][1]) for side in sides]
            firsts = [args.base_runs[0], args.new_runs[0]]
        else:
            from dynaprof.model.suite import is_suite
            from dynaprof.model.sweep import is_sweep

            if len(args.runs) == 2 and any(is_suite(p) for p in args.runs):  # two suites, model by model
                from dynaprof.cli.compare import run_name
                from dynaprof.cli.suite_gates import pr_suites_cli

                return pr_suites_cli(args.runs, (run_name(args.runs[0]), run_name(args.runs[1])), str(args.number),
                                     margin, lambda folder: _prepare(args.output or folder / PR_DIR), post_lines)
            if len(args.runs) == 2 and any(is_sweep(p) for p in args.runs):  # two sweeps' growth exponents
                from dynaprof.cli.compare import run_name
                from dynaprof.cli.sweep_gates import pr_sweeps_cli

                return pr_sweeps_cli(args.runs, (run_name(args.runs[0]), run_name(args.runs[1])), str(args.number),
                                     lambda folder: _prepare(args.output or folder / PR_DIR), post_lines)
            loaded = [_load(p) for p in args.runs]
            firsts = list(args.runs)
        if len(loaded) == 1:
            session, folder = loaded[0]
            files = pr_files(_ctx(session, options))
        else:
            from dynaprof.cli.compare import run_name

            (base, _), (new, folder) = loaded
            names = (run_name(firsts[0]), run_name(firsts[1]))
            if names[0] == names[1]:
                names = (f"{names[0]}-base", f"{names[1]}-new")
            base_ctx, new_ctx = _ctx(base, options), _ctx(new, options)
            cmp = compare_sessions(base, new, margin=margin)
            files = pr_compare_files(cmp, base, new, names, base_ctx, new_ctx, options)
        out = _prepare(args.output or folder / PR_DIR)
        written = write_files(out, dict(files))
        info(f"dynaprof: wrote {display_path(out)}/: " + ", ".join(sorted(p.name for p in written)))
        for line in post_lines(out, written, str(args.number)):
            info(line)
        return 0


COMMAND = PrCommand()
