"""Multi-rank jobs in the CLI: what ``run``, ``report`` and ``compare`` call for torchrun jobs.

A multi-rank run folder ``DIR`` holds one ordinary run folder per rank (``DIR/rank-<N>/``) and
the merged view (``DIR/ranks.md``, ``ranks.html``, ``ranks.json``). Under torchrun each rank's
``dynaprof run`` writes its folder; the last rank to finish (every rank checks after saving its
own session) writes the merged view. Writes are atomic and deterministic, so ranks that finish
together and write it twice are harmless. Under plain torchrun rank 0 waits (up to
``DYNAPROF_RANKS_WAIT`` seconds, default 60) for the others and prints the merged summary;
``dynaprof run --nproc-per-node N`` (``launch_ranks``) prints it itself once torchrun returns.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from dynaprof import fmt
from dynaprof.capture import ranks as cr
from dynaprof.cli.common import display_path, info_next_steps, write_files
from dynaprof.cli.run_options import add_run_options
from dynaprof.errors import DynaprofError, SessionError
from dynaprof.model.journal import JOURNAL_FILE
from dynaprof.model.session import Session
from dynaprof.model.store import SESSION_FILE, load_session, rank_dir_name
from dynaprof.pipeline import info
from dynaprof.render.base import RenderOptions
from dynaprof.run_folder.location import RUNS_DIR, default_run_dir, prepare_out_dir

if TYPE_CHECKING:  # the merge and its renderers are imported on use: every `dynaprof` command imports this
    from dynaprof.analysis.ranks import RankSummary

WAIT_ENV = "DYNAPROF_RANKS_WAIT"
DEFAULT_WAIT_S = 60.0
#: options of `dynaprof run` the launcher does not pass on to the ranks
_NOT_FORWARDED = {"output", "nproc_per_node", "module", "script", "help"}


def current_rank() -> cr.RankEnv | None:
    return cr.rank_env()


# ---------------------------------------------------------------------------------------------
# run: one rank


def rank_run_dir(args_output: Path | None, stem: str, env: cr.RankEnv | None = None) -> Path:
    """``DIR/rank-<RANK>``: DIR is ``-o`` or ``./dynaprof-runs/<stem>-<job id>`` (the same on every
    rank, see ``capture.ranks.shared_run_name``)."""
    env = env or current_rank()
    if env is None:
        raise DynaprofError("not a rank of a multi-rank (torchrun) job")
    base = args_output if args_output is not None else Path(RUNS_DIR) / cr.shared_run_name(stem, env)
    return base / rank_dir_name(env.rank)


def prepare_rank_dir(args_output: Path | None, stem: str, force: bool) -> Path:
    """Create this rank's folder (refusing a non-empty one unless ``force``) and drop a session
    left there by an earlier run, so no rank mistakes it for this job's."""
    path = prepare_out_dir(rank_run_dir(args_output, stem), force)
    (path / SESSION_FILE).unlink(missing_ok=True)
    return path


def rank_line(who: str, session: Session, run_dir: Path) -> str:
    """``dynaprof: rank 1 of 2: exited 0, 2 compiled frames, 88 ms compile -> DIR/rank-1/``."""
    n, r = len(session.frames), session.run
    status = f"{r.end_reason} {r.exit_status}"
    if session.capture.source == "torch_trace":
        status = "log complete" if r.complete else "log truncated"
    return (f"dynaprof: {who}: {status}, {fmt.plural(n, 'compiled frame')}, "
            f"{fmt.seconds(session.total_compile_s)} compile -> {display_path(run_dir)}/")


def finish_rank(session: Session, run_dir: Path, notes: list[str], options: RenderOptions, quiet: bool) -> None:
    """After a rank saved its session: one short line, the merged view when this rank is the last
    one, and on rank 0 of a plain torchrun job the merged summary (after waiting for the others)."""
    env = current_rank()
    rank = env.rank if env else session.run.rank or 0
    world = env.world_size if env else session.run.world_size or 1
    job_dir = run_dir.parent
    if not quiet:
        info(rank_line(f"rank {rank} of {world}", session, run_dir))
        for note in notes:
            info(f"  rank {rank} note: {note}")
    summary = maybe_write_merged(job_dir, world, options)
    if rank != 0 or (env is not None and env.launcher):
        return
    if summary is None:
        summary = _wait_for_ranks(job_dir, world, options)
    if quiet:
        return
    from dynaprof.render.ranks import ranks_text

    if summary is None:
        info(f"dynaprof: rank 0: not every rank had finished; the last one writes {display_path(job_dir)}/ranks.html "
             f"(or run: dynaprof report {display_path(job_dir)})")
        return
    sys.stderr.write("\n" + ranks_text(summary, options.max_rows))
    _print_merged_written(job_dir)


def _wait_for_ranks(job_dir: Path, world: int, options: RenderOptions) -> RankSummary | None:
    try:
        wait = float(os.environ.get(WAIT_ENV, DEFAULT_WAIT_S))
    except ValueError:
        wait = DEFAULT_WAIT_S
    deadline = time.monotonic() + max(wait, 0.0)
    while True:
        summary = maybe_write_merged(job_dir, world, options)
        if summary is not None or time.monotonic() >= deadline:
            return summary
        time.sleep(0.2)


# ---------------------------------------------------------------------------------------------
# the merged view


def rank_sessions(job_dir: Path) -> tuple[dict[int, Session], list[str]]:
    """The saved session of every ``rank-N`` folder, and a note per unreadable one."""
    sessions: dict[int, Session] = {}
    notes: list[str] = []
    for rank, path in cr.rank_dirs(job_dir).items():
        if not (path / SESSION_FILE).exists():
            continue
        try:
            sessions[rank] = load_session(path)
        except SessionError as e:
            notes.append(f"rank {rank}: {e.message}")
    return sessions, notes


def write_merged(job_dir: Path, options: RenderOptions, world_size: int | None = None,
                 sessions: dict[int, Session] | None = None) -> RankSummary | None:
    """Write ``ranks.md``, ``ranks.html`` and ``ranks.json`` from the rank sessions present;
    None (nothing written) when there are none."""
    if sessions is None:
        sessions, _ = rank_sessions(job_dir)
    if not sessions:
        return None
    from dynaprof.analysis.rank_desync import add_desync
    from dynaprof.analysis.ranks import merge_ranks
    from dynaprof.render.ranks import render_ranks

    summary = add_desync(merge_ranks(sessions, world_size), sessions)
    write_files(job_dir, render_ranks(summary, options.max_rows))
    return summary


def maybe_write_merged(job_dir: Path, world_size: int | None = None,
                       options: RenderOptions | None = None) -> RankSummary | None:
    """Write the merged view if every rank of ``world_size`` has saved its session (else None)."""
    if world_size is None:
        return write_merged(job_dir, options or RenderOptions())
    if not all((job_dir / rank_dir_name(r) / SESSION_FILE).exists() for r in range(world_size)):
        return None
    sessions, _ = rank_sessions(job_dir)
    if any(r not in sessions for r in range(world_size)):
        return None
    return write_merged(job_dir, options or RenderOptions(), world_size, sessions)


def _print_merged_written(job_dir: Path) -> None:
    info(f"dynaprof: wrote {display_path(job_dir)}/ranks.md, ranks.html, ranks.json "
         f"(one run folder per rank: {display_path(job_dir)}/rank-N/)")
    info_next_steps(job_dir / "ranks.html", job_dir)
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# run --nproc-per-node: the launcher


def forwarded_options(args: argparse.Namespace, leave: frozenset[str] = frozenset()) -> list[str]:
    """The `dynaprof run` options of ``args`` that differ from their defaults, as command-line
    words for the ranks (all but -o, --nproc-per-node and the target), less the dests in ``leave``."""
    out: list[str] = []
    for action in add_run_options(argparse.ArgumentParser(add_help=False)):
        if not action.option_strings or action.dest in _NOT_FORWARDED or action.dest in leave:
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default or value is None:
            continue
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:
            if value == action.const:
                out.append(flag)
        else:
            out += [flag, str(value.resolve()) if isinstance(value, Path) else str(value)]
    return out


def launch_ranks(args: argparse.Namespace, out_dir: Path, kind: str, target: str, rest: list[str],
                 options: RenderOptions) -> int:
    """``dynaprof run --nproc-per-node N``: run torchrun over ``dynaprof run`` and write the
    merged view once every rank finished; returns torchrun's exit status."""
    if cr.inside_torchrun():
        raise DynaprofError("--nproc-per-node: already inside a torchrun job (RANK is set); drop the option")
    try:
        nproc = cr.check_nproc(args.nproc_per_node)
    except ValueError as e:
        raise DynaprofError(str(e)) from None
    job_dir = prepare_out_dir(out_dir, args.force).resolve()
    target_words = ["-m", target, *rest] if kind == "module" else [target, *rest]
    cmd = cr.torchrun_command(nproc, job_dir, forwarded_options(args), target_words)
    if not args.quiet:
        info(f"dynaprof: profiling {target} on {nproc} ranks (torchrun) -> {display_path(job_dir)}/")
    status = _run_torchrun(cmd)
    from dynaprof.render.ranks import ranks_text

    summary = write_merged(job_dir, options)
    if summary is None:
        info(f"dynaprof: no rank saved a session in {display_path(job_dir)}/ (torchrun exit status {status})")
        return status or 1
    if not args.quiet:
        sys.stderr.write("\n" + ranks_text(summary, options.max_rows))
        _print_merged_written(job_dir)
    return status


def _run_torchrun(cmd: list[str]) -> int:
    try:
        proc = subprocess.Popen(cmd, env=cr.torchrun_env())
    except OSError as e:
        raise DynaprofError(f"cannot start torchrun: {e.strerror or e}") from e
    try:
        status = proc.wait()
    except KeyboardInterrupt:  # torchrun got the same Ctrl-C and stops its ranks; let it save
        try:
            status = proc.wait(timeout=60)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            proc.send_signal(signal.SIGTERM)
            status = proc.wait()
    return 128 - status if status < 0 else status


# ---------------------------------------------------------------------------------------------
# report


def is_multi_rank_dir(path: Path) -> bool:
    """A folder without its own session.json whose ``rank-N`` folders hold sessions (or journals)."""
    path = Path(path)
    if not path.is_dir() or (path / SESSION_FILE).exists():
        return False
    return any((d / SESSION_FILE).exists() or (d / JOURNAL_FILE).exists() for d in cr.rank_dirs(path).values())


def report_multi_rank(job_dir: Path, options: RenderOptions, output: Path | None = None, force: bool = False,
                      quiet: bool = False) -> int:
    """``dynaprof report DIR``: re-render every rank folder, then the merged view."""
    from dynaprof import pipeline
    from dynaprof.cli.sessions import load_any

    out_dir = prepare_out_dir(output, force) if output is not None else job_dir
    sessions: dict[int, Session] = {}
    for rank, src in cr.rank_dirs(job_dir).items():
        if not ((src / SESSION_FILE).exists() or (src / JOURNAL_FILE).exists()):
            continue
        try:
            session, source_dir, _ = load_any(src)
        except DynaprofError as e:
            info(f"dynaprof: rank {rank}: skipped: {e.message}")
            continue
        dest = out_dir / rank_dir_name(rank)
        if dest != src:
            prepare_out_dir(dest, force)
        _, notes = pipeline.write(session, dest, options, run_dir=source_dir, say=info)
        sessions[rank] = session
        if not quiet:
            info(rank_line(f"rank {rank}", session, dest))
            for note in notes:
                info(f"  rank {rank} note: {note}")
    return _merged(out_dir, options, sessions, None, quiet, f"{job_dir}: no rank session could be read")


def _merged(out_dir: Path, options: RenderOptions, sessions: dict[int, Session], world_size: int | None,
            quiet: bool, none_read: str) -> int:
    """The merged view of a report over ranks, said unless ``quiet``; ``none_read``: the error."""
    summary = write_merged(out_dir, options, world_size=world_size, sessions=sessions)
    if summary is None:
        raise DynaprofError(none_read)
    from dynaprof.render.ranks import ranks_text

    if not quiet:
        sys.stderr.write("\n" + ranks_text(summary, options.max_rows))
        _print_merged_written(out_dir)
    return 0


def is_rank_trace_dir(path: Path) -> bool:
    """A folder of TORCH_TRACE logs of more than one rank (``dedicated_log_torch_trace_rank_<N>[_*].log``)."""
    from dynaprof.ingest.torch_trace import is_torch_trace, rank_logs

    path = Path(path)
    if not path.is_dir() or (path / SESSION_FILE).exists():
        return False
    try:
        return len(rank_logs(path)) > 1 and is_torch_trace(path)
    except DynaprofError:
        return False


def report_trace_ranks(log_dir: Path, options: RenderOptions, output: Path | None = None, force: bool = False,
                       quiet: bool = False, strict: bool = False) -> int:
    """``dynaprof report DIR`` on a folder of per-rank TORCH_TRACE logs: import every rank into
    ``OUT/rank-N/`` and write the merged view, as ``dynaprof run --nproc-per-node`` does."""
    from dynaprof import pipeline
    from dynaprof.ingest.torch_trace import rank_logs
    from dynaprof.ingest.trace_to_session import import_torch_trace_ranks

    logs = rank_logs(log_dir)
    sessions = import_torch_trace_ranks(log_dir, strict=strict)
    if output is not None:
        out_dir = prepare_out_dir(output, force)
    else:
        out_dir = prepare_out_dir(default_run_dir(log_dir.resolve().name or "trace"), False)
    for rank, session in sessions.items():
        dest = prepare_out_dir(out_dir / rank_dir_name(rank), force)
        _, notes = pipeline.write(session, dest, options, run_dir=dest, say=info)
        if not quiet:
            info(rank_line(f"rank {rank} ({logs[rank].name})", session, dest))
            for note in notes:
                info(f"  rank {rank} note: {note}")
            for w in session.capture.warnings:
                info(f"  rank {rank} warning: {fmt.terminal_safe(fmt.one_line(w, 300))}")
    return _merged(out_dir, options, sessions, max(sessions) + 1, quiet, f"{log_dir}: no rank log could be imported")


# ---------------------------------------------------------------------------------------------
# compare


def rank_sides(path: Path) -> dict[int, Path] | None:
    """rank -> folder for a multi-rank folder; None for a single run."""
    if not is_multi_rank_dir(path):
        return None
    return {r: d for r, d in cr.rank_dirs(path).items() if (d / SESSION_FILE).exists()}


def pick_rank(path: Path, rank: int) -> Path:
    """``--rank N``: the rank's run folder of a multi-rank folder (a single run stays itself)."""
    sides = rank_sides(path)
    if sides is None:
        return path
    if rank not in sides:
        raise DynaprofError(f"{path}: no session for rank {rank} (ranks: {', '.join(map(str, sides)) or 'none'})")
    return sides[rank]
