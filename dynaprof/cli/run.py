"""``dynaprof run``: run a script as python would and profile every Dynamo compile in it."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from dynaprof import fmt
from dynaprof.cli.common import default_run_dir, display_path, info, prepare_out_dir, summary_width
from dynaprof.cli.outputs import render_options
from dynaprof.cli.run_options import add_run_options
from dynaprof.errors import DynaprofError
from dynaprof.fmt import stored_s
from dynaprof.model.provenance import redact_argv
from dynaprof.model.session import Session

if TYPE_CHECKING:
    from dynaprof.capture.launcher import LaunchResult


def _target(args: argparse.Namespace) -> tuple[str, str, list[str]]:
    if args.module:
        module, *rest = args.module
        if args.script:
            rest += args.script
        return "module", module, rest
    script = list(args.script)
    if script and script[0] == "--":
        script = script[1:]
    if not script:
        raise DynaprofError("nothing to run: give a script (dynaprof run script.py [args]) or -m module")
    path, *rest = script
    p = Path(path)
    if not p.exists():
        raise DynaprofError(f"can't open file {path!r}: no such file")
    if p.is_dir():
        raise DynaprofError(f"can't run {path!r}: it is a folder (did you mean -m?)")
    if not os.access(p, os.R_OK):
        raise DynaprofError(f"can't open file {path!r}: permission denied")
    return "script", path, rest


#: the folder under the run folder holding each ``--repeat`` run's journal (and cProfile files)
REPEATS_DIR = "repeats"
#: the compiler cache locations ``--repeat`` points at a fresh folder for each run; TMPDIR too,
#: since Inductor keeps its C++ precompiled header in the temp dir whatever its cache dir is
CACHE_ENV = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TMPDIR")


@contextlib.contextmanager
def cold_caches(cold: bool = True) -> Iterator[dict[str, str]]:
    """A fresh, empty folder for each compiler cache (``CACHE_ENV`` name -> folder), removed on
    exit; none where not ``cold`` (the user's caches)."""
    folders: dict[str, str] = {}
    if cold:
        folders = {name: tempfile.mkdtemp(prefix=f"dynaprof-{name.split('_')[0].lower()}-") for name in CACHE_ENV}
    try:
        yield folders
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)


class RunCommand:
    name = "run"
    help = "run a script (or -m module) and profile every torch.compile compile in it"
    description = (
        "Runs SCRIPT exactly as `python SCRIPT ARGS` would (same argv, __main__, sys.path[0], cwd, stdin "
        "and exit status) and records every Dynamo frame compile: ids, phases, restarts, graph breaks, "
        "recompiles, guards, and sampled stacks of where the compile time went."
    )

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        add_run_options(p)

    def run(self, args: argparse.Namespace) -> int:
        # imported here: every other command (report, compare...) starts without them
        from dynaprof.capture.child import ChildConfig
        from dynaprof.capture.journal import JOURNAL_FILE, read_journal
        from dynaprof.capture.launcher import launch
        from dynaprof.capture.progress import follow_progress
        from dynaprof.cli import ranks_support
        from dynaprof.cli.outputs import print_written
        from dynaprof.ingest.assemble import ParentFacts, assemble
        from dynaprof.render.registry import preload as preload_renderers
        from dynaprof.render.terminal import summary_text
        from dynaprof.run_folder.writer import write_run_folder

        kind, target, rest = _target(args)
        options = render_options(args)
        if args.rate is None:
            args.rate = 100.0 if args.sampler == "py-spy" else 1000.0
        if not 0 < args.rate <= 20000:
            raise DynaprofError(f"--rate must be between 0 and 20000 samples per second, got {args.rate:g}")
        if args.native and args.sampler != "py-spy":
            raise DynaprofError("--native needs --sampler py-spy (native frames come from py-spy)")
        if args.sampler == "py-spy":
            from dynaprof.capture.pyspy import preflight

            why = preflight()
            if why is not None:
                info(f"dynaprof: {why}; falling back to the builtin sampler")
                args.sampler, args.rate, args.native = "builtin", 1000.0, False
        if args.repeat < 1:
            raise DynaprofError(f"--repeat must be at least 1, got {args.repeat}")
        if args.repeat > 1 and (args.nproc_per_node is not None or ranks_support.current_rank() is not None
                                or args.sampler == "py-spy" or args.torch_trace):
            raise DynaprofError("--repeat runs one process at a time with the builtin sampler: it does not "
                                "combine with torchrun ranks, --sampler py-spy or --torch-trace")
        if args.counterfactual and (args.repeat > 1 or args.nproc_per_node is not None
                                    or ranks_support.current_rank() is not None):
            raise DynaprofError("--counterfactual compares one run with one more: it does not combine with --repeat "
                                "or torchrun ranks")
        if args.warm and args.repeat == 1:
            raise DynaprofError("--warm goes with --repeat N (a single run uses the caches as they are)")
        stem = Path(target).stem if kind == "script" else target.rsplit(".", 1)[-1]
        if args.nproc_per_node is not None:
            return ranks_support.launch_ranks(args, args.output or default_run_dir(stem), kind, target, rest, options)
        rank = ranks_support.current_rank()
        if rank is not None:
            run_dir = ranks_support.prepare_rank_dir(args.output, stem, args.force).resolve()
        else:
            run_dir = prepare_out_dir(args.output or default_run_dir(stem), args.force).resolve()
        if not args.quiet and rank is None:
            info(f"dynaprof: profiling {fmt.terminal_safe(target)} -> {fmt.terminal_safe(display_path(run_dir))}/")
        # the renderers' imports (networkx...) on the idle parent while the script runs, not after it
        warm = threading.Thread(target=preload_renderers, name="dynaprof-preload", daemon=True)
        warm.start()
        runs: list[tuple[LaunchResult, Session | None, Path]] = []  # (result, session, journal)
        for i in range(1, args.repeat + 1):
            where = run_dir if args.repeat == 1 else run_dir / REPEATS_DIR / str(i)
            where.mkdir(parents=True, exist_ok=True)
            journal = where / JOURNAL_FILE
            try:  # the child appends to it; check here that the folder takes writes at all
                journal.write_bytes(b"")
            except OSError as e:
                raise DynaprofError(f"cannot write {journal}: {e.strerror or e}") from e
            if args.repeat > 1 and not args.quiet:
                info(f"dynaprof: repeat {i} of {args.repeat}" + ("" if args.warm else " (cold compiler caches)"))
            cfg = ChildConfig(
                journal=str(journal),
                kind=kind,
                target=target,
                args=rest,
                sampler=args.sampler if args.sampler != "py-spy" else "none",
                rate_hz=args.rate,
                inline_profile=args.inline_profile,
                time_calls=args.time_calls,
                aot_components=args.aot_components,
                cprofile_dir=str(where / "cprofile") if args.cprofile else None,
                torch_trace_dir=str(args.torch_trace.resolve()) if args.torch_trace else None,
            )
            pyspy = None
            if args.sampler == "py-spy":
                from dynaprof.capture.pyspy import PySpy

                pyspy = PySpy(run_dir, args.rate, args.native)
            progress = follow_progress(journal, args.quiet or rank is not None)
            try:
                with cold_caches(args.repeat > 1 and not args.warm) as caches:
                    result = launch(cfg, on_started=pyspy.attach if pyspy else None, progress=progress,
                                    extra_env=caches)
            finally:
                if progress is not None:
                    progress.stop()
            notes = pyspy.finish() if pyspy else []
            plain = None
            if args.counterfactual and result.exit_status == 0 and result.signal is None:
                from dynaprof.cli.counterfactual import run_plain

                with cold_caches() as fresh:
                    plain = run_plain(cfg, run_dir, fresh, args.quiet)
            facts = ParentFacts(
                command=redact_argv(["dynaprof", *args.argv]),
                exit_status=result.exit_status,
                signal=result.signal,
                wall_s=stored_s(result.wall_s),
                sampler=args.sampler,
                requested_hz=args.rate if args.sampler != "none" else None,
                native=args.native,
                cprofile=args.cprofile,
                torch_trace_dir=str(args.torch_trace) if args.torch_trace else None,
                run_dir=str(run_dir),
                notes=notes,
            )
            session = assemble((rec for _, rec in read_journal(journal)), facts, plain) if journal.exists() else None
            if session is not None:
                for name, value in caches.items():  # ours, not the user's: --repeat makes them again
                    if session.run.env is not None and session.run.env.get(name) == value:
                        del session.run.env[name]
                if pyspy is not None:
                    pyspy.merge_into(session)
            runs.append((result, session, journal))
            if session is None or result.exit_status != 0:
                break  # a failed run is reported as it is; the rest would fail the same way
        warm.join()
        result, session, journal = runs[-1]
        if session is None:
            raise DynaprofError(
                f"the script did not start ({target}); exit status {result.exit_status}", result.exit_status or 1
            )
        if args.repeat > 1:
            from dynaprof.analysis.repeats import combine

            session = combine([s for _, s, _ in runs if s is not None], cold=not args.warm)
            result = next((r for r, _, _ in runs if r.exit_status != 0), result)
            if len(runs) < args.repeat:
                session.capture.warnings.append(
                    f"--repeat {args.repeat}: stopped after run {len(runs)}, which exited with status "
                    f"{result.exit_status}; the session holds the {len(runs)} runs made")
        try:
            written, render_notes = write_run_folder(session, run_dir, options, progress=info)
        except DynaprofError as e:  # the script ran; its exit status is still what we return
            info(f"dynaprof: error: {e.message}; the capture journal is kept: re-run "
                 f"`dynaprof report {fmt.terminal_safe(display_path(run_dir))}` once there is space")
            return result.exit_status
        for _, _, j in runs:
            j.unlink(missing_ok=True)
            if j.parent != run_dir:
                with contextlib.suppress(OSError):  # kept when it holds cProfile files
                    j.parent.rmdir()
        if args.repeat > 1:
            with contextlib.suppress(OSError):
                (run_dir / REPEATS_DIR).rmdir()
        if rank is not None:
            ranks_support.finish_rank(session, run_dir, render_notes, options, args.quiet)
        elif not args.quiet:
            info("")
            sys.stderr.write(summary_text(session, options.max_rows, summary_width()))
            print_written(run_dir, written, render_notes)
        return result.exit_status


COMMAND = RunCommand()
