"""``dynaprof suite SUITE -o DIR``: profile a model zoo, each entry and repeat a fresh ``dynaprof
run`` process with cold compiler caches (``--warm`` keeps them), on this machine's workers, a Slurm
cluster or a Ray cluster (``dynaprof.executors``). Each run's folder is kept at ``DIR/NAME/K``;
``suite.json`` is rewritten after every run that comes back, so Ctrl-C or a lost worker keeps what
finished and ``--resume DIR`` runs only what is missing. Then ``summary.md``, ``report.html`` and
``causes.svg`` beside the runs (``render.suite_report``).
"""

from __future__ import annotations

import argparse
import datetime
import os
from pathlib import Path

from dynaprof import fmt
from dynaprof.cli.common import display_path
from dynaprof.cli.executor_options import (
    add_each_run_options,
    add_executor_options,
    check_executor_options,
    each_run_options,
    engine_options,
)
from dynaprof.errors import DynaprofError
from dynaprof.executors import make_engine, run_all
from dynaprof.executors.run_task import RunTask, TaskResult
from dynaprof.model.environment import redact_argv
from dynaprof.model.suite import (
    ORIGIN_DYNAPROF,
    SUITE_SCHEMA_VERSION,
    Suite,
    SuiteRun,
    load_entries,
    load_suite,
    run_key,
    save_suite,
)
from dynaprof.pipeline import info
from dynaprof.run_folder.location import default_run_dir, prepare_out_dir
from dynaprof.run_folder.suite_folder import finish_suite, read_suite_run
from dynaprof.version import __version__


class SuiteCommand:
    name = "suite"
    help = "profile a suite of scripts (a model zoo), each run a fresh process, on local, Slurm or Ray workers"
    description = (
        "Runs every entry of SUITE (a TOML file of [[entry]] tables: name, script, args, env; or a folder of "
        "scripts) --repeat times, each run a fresh `dynaprof run` process with cold compiler caches, its folder "
        "kept at DIR/NAME/K. Writes suite.json (after every run), summary.md, report.html and causes.svg: per "
        "model its compile time, hottest cause and phase and counts; across the suite the seconds of each kind "
        "of cause. --resume DIR runs only what is missing."
    )

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("suite", type=Path, nargs="?", metavar="SUITE", help="suite TOML file or folder of scripts")
        p.add_argument("-o", "--output", type=Path, metavar="DIR", help="suite folder (default: a new folder "
                                                                        "under ./dynaprof-runs/)")
        p.add_argument("--repeat", type=int, default=1, metavar="K", help="runs per entry (default 1; 3 or more "
                                                                          "for compare's noise verdicts)")
        p.add_argument("--warm", action="store_true", help="keep the compiler caches (default: cold, fresh ones "
                                                           "per run)")
        p.add_argument("--resume", type=Path, metavar="DIR", help="run what is missing from the suite folder DIR")
        p.add_argument("--harness-csv", nargs="+", type=Path, metavar="CSV",
                       help="read PyTorch's dynamo benchmark harness CSVs (compilation_latency, "
                            "*_compilation_metrics.csv) into DIR as a suite without causes, to compare with")
        p.add_argument("--force", action="store_true", help="write into an existing non-empty DIR")
        add_each_run_options(p)
        p.add_argument("--quiet", "-q", action="store_true", help="only the summary on stderr")
        add_executor_options(p)

    def run(self, args: argparse.Namespace) -> int:
        check_executor_options(args)
        if args.harness_csv:
            return self._harness(args)
        suite, out = self._suite(args)
        todo = [(e, k) for e in suite.entries for k in range(1, suite.repeat + 1) if not suite.finished(e.name, k)]
        tasks = [RunTask(run_key(e.name, k), str(out / e.name / str(k)), [e.script, *e.args], suite.run_options,
                         e.env, e.cwd or os.getcwd(), suite.cold) for e, k in todo]
        if not args.quiet:
            info(f"dynaprof suite: {fmt.plural(len(suite.entries), 'model')} x {fmt.plural(suite.repeat, 'run')}"
                 f"{f', {len(tasks)} to run' if args.resume else ''} on the {args.executor} executor "
                 f"-> {fmt.terminal_safe(display_path(out))}/")
        suite.interrupted = False
        interrupted = self._run(args, suite, out, tasks) if tasks else False
        suite.interrupted = interrupted
        return self._finish(suite, out, interrupted)

    @staticmethod
    def _harness(args: argparse.Namespace) -> int:
        """``--harness-csv``: the dashboard's figures as a suite folder (nothing runs)."""
        from dynaprof.ingest.harness_csv import read_harness_csvs

        if args.suite is not None or args.resume is not None:
            raise DynaprofError("--harness-csv reads CSVs into -o DIR: it takes no SUITE and no --resume")
        suite = read_harness_csvs(args.harness_csv)
        suite.command = redact_argv(["dynaprof", *args.argv])
        suite.start_time = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        out = prepare_out_dir(args.output or default_run_dir("harness-suite"), args.force).resolve()
        SuiteCommand._write(suite, out)
        return 0

    @staticmethod
    def _suite(args: argparse.Namespace) -> tuple[Suite, Path]:
        if args.repeat < 1:
            raise DynaprofError(f"--repeat must be at least 1, got {args.repeat}")
        if args.resume is not None:
            out = args.resume.resolve()
            return load_suite(out), out
        if args.suite is None:
            raise DynaprofError("nothing to run: dynaprof suite SUITE.toml -o DIR (or --resume DIR)")
        entries = load_entries(args.suite)
        out = prepare_out_dir(args.output or default_run_dir(args.suite.stem + "-suite"), args.force).resolve()
        run_opts = each_run_options(args)
        suite = Suite(SUITE_SCHEMA_VERSION, str(args.suite), ORIGIN_DYNAPROF, entries, args.repeat, not args.warm,
                      args.executor, args.workers, redact_argv(["dynaprof", *args.argv]),
                      datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), None, __version__,
                      run_options=run_opts)
        save_suite(suite, out)
        return suite, out

    @staticmethod
    def _run(args: argparse.Namespace, suite: Suite, out: Path, tasks: list[RunTask]) -> bool:
        engine = make_engine(engine_options(args, out))
        suite.executor, suite.workers = args.executor, args.workers
        suite.notes = list(dict.fromkeys([*engine.notes]))
        total, done = len(tasks), 0

        def on_result(result: TaskResult) -> None:
            nonlocal done
            done += 1
            name, _, k = result.key.rpartition("/")
            record = SuiteRun(name, int(k), result.key, result.exit_status, result.error, result.wall_s,
                              result.attempt, result.retried_because, result.host)
            if result.exit_status is not None:
                suite.torch_version = read_suite_run(record, out / result.key) or suite.torch_version
            suite.runs = [r for r in suite.runs if (r.entry, r.repeat) != (name, int(k))] + [record]
            suite.runs.sort(key=lambda r: ([e.name for e in suite.entries].index(r.entry), r.repeat))
            save_suite(suite, out)
            if not args.quiet:
                took = (f"failed: {record.error}" if not record.ok else
                        f"{fmt.seconds(record.measures.get('total'))} compile" if 'total' in record.measures
                        else "nothing compiled")
                again = f" (second attempt: the first {record.retried_because})" if record.retried_because else ""
                info(f"dynaprof suite: {fmt.terminal_safe(result.key)}: {fmt.terminal_safe(took)}{again} "
                     f"({done} of {total})")

        def on_retry(result: TaskResult) -> None:
            if not args.quiet:
                info(f"dynaprof suite: {fmt.terminal_safe(result.key)} died ({fmt.terminal_safe(result.error or '?')}"
                     "); running it once more")

        try:
            return run_all(engine, tasks, on_result, on_retry)
        finally:
            engine.close()

    @staticmethod
    def _write(suite: Suite, out: Path) -> None:
        """suite.json and the reports into ``out``, and the summary and what was written on stderr."""
        from dynaprof.analysis.suite_facts import model_summaries
        from dynaprof.render.suite_report import terminal_lines

        written = finish_suite(suite, out)
        for line in terminal_lines(suite, model_summaries(suite)):
            info(f"  {line}")
        folders = sum(1 for r in suite.runs if r.run_dir)
        info(f"dynaprof: wrote {display_path(out)}/: " + ", ".join(p.name for p in written)
             + (f" and {fmt.plural(folders, 'run folder')}" if folders else ""))

    @staticmethod
    def _finish(suite: Suite, out: Path, interrupted: bool) -> int:
        SuiteCommand._write(suite, out)
        missing = sum(1 for e in suite.entries for k in range(1, suite.repeat + 1) if not suite.finished(e.name, k))
        if interrupted:
            info(f"dynaprof suite: interrupted; the runs that finished are kept: dynaprof suite --resume "
                 f"{display_path(out)} runs the {fmt.plural(missing, 'run')} missing")
            return 130
        if missing:
            info(f"dynaprof suite: {fmt.plural(missing, 'run')} did not finish (see summary.md); "
                 f"dynaprof suite --resume {display_path(out)} runs them again")
        return 0 if any(r.ok for r in suite.runs) else 1


COMMAND = SuiteCommand()
