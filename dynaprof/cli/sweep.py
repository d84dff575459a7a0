"""Sweeps seen from the cli: ``dynaprof sweep --param NAME=V1,V2,... script.py [args...]``.

Each point and repeat is a fresh ``dynaprof run`` process (the same pipeline, one run folder each,
kept), with NAME set in its environment and ``{NAME}`` replaced in the arguments, and cold
compiler caches unless ``--warm`` (``executors.run_task``, the run every executor makes). Beside the
point folders go ``sweep.json`` (rewritten after every run, so Ctrl-C keeps what finished), then
``summary.md``, ``report.html`` and ``growth.svg``. A run that fails is recorded with its exit status
and error and the sweep goes on.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
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
from dynaprof.model.sweep import (
    SWEEP_SCHEMA_VERSION,
    PointRun,
    Sweep,
    SweepParam,
    SweepPoint,
    check_params,
    point_dir,
    save_sweep,
    size_of,
)
from dynaprof.pipeline import info
from dynaprof.run_folder.location import default_run_dir, prepare_out_dir
from dynaprof.version import __version__

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_param(text: str) -> SweepParam:
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise DynaprofError(f"--param {text!r}: expected NAME=V1,V2,... with NAME an environment variable name")
    vals = [v.strip() for v in values.split(",")]
    if not vals or any(not v for v in vals):
        raise DynaprofError(f"--param {text!r}: give its values separated by commas, none empty")
    return SweepParam(name, vals)


def substitute(args: list[str], values: dict[str, str]) -> list[str]:
    """``{NAME}`` replaced by its value in every argument (other braces left as they are)."""
    out = []
    for a in args:
        for name, v in values.items():
            a = a.replace("{" + name + "}", v)
        out.append(a)
    return out


class _Status:
    """The status line on stderr (a terminal only): point, repeat, ETA; a line per run otherwise."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet = total, quiet
        self.tty = sys.stderr.isatty() and os.environ.get("DYNAPROF_PROGRESS", "1") != "0"
        self.walls: list[float] = []

    def show(self, text: str, done: int) -> None:
        if self.quiet or not self.tty:
            return
        eta = ""
        if self.walls:
            eta = f", ETA {fmt.duration(sum(self.walls) / len(self.walls) * (self.total - done))}"
        sys.stderr.write(f"\r\x1b[Kdynaprof sweep: {fmt.terminal_safe(text)} ({done + 1} of {self.total}{eta})")
        sys.stderr.flush()

    def done(self, text: str, wall: float) -> None:
        self.walls.append(wall)
        if not self.quiet and not self.tty:
            info(f"dynaprof sweep: {fmt.terminal_safe(text)}")

    def clear(self) -> None:
        if self.tty and not self.quiet:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def point_record(out: Path, result: TaskResult) -> tuple[PointRun, str | None]:
    """What a sweep keeps of one point's run (``executors.run_task``, the run every executor
    makes): its record and its torch version."""
    repeat = int(result.key.rsplit("/", 1)[-1])
    record = PointRun(repeat, result.key, result.exit_status, None, result.wall_s)
    torch_version = None
    run_dir = out / result.key
    if (run_dir / "session.json").exists():
        from dynaprof.run_folder.sweep_folder import read_run

        try:
            record.measures, record.counts, torch_version = read_run(run_dir)
        except DynaprofError as e:
            record.error = f"its session.json cannot be read: {e.message}"
    else:
        record.error = "no session.json was written"
    if result.exit_status != 0:  # a run Ctrl-C cut short keeps its folder, but not its measures
        record.error = result.error
    return record, torch_version


class SweepCommand:
    name = "sweep"
    help = "run a script at several sizes and fit how its compile time grows, per cause and phase"
    description = (
        "Runs SCRIPT once per point and repeat, each a fresh `dynaprof run` process with cold compiler caches "
        "(--warm keeps them), with the environment variable NAME set and {NAME} replaced in ARGS. Fits "
        "t = a * N^k on log-log axes for the total compile time, each cause, phase group and restart waste, and "
        "the exact counts, with a 95% interval from the repeats. Writes every point's run folder, sweep.json, "
        "summary.md, report.html and growth.svg into DIR."
    )

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2,...",
                       help="a size to sweep: sets $NAME and replaces {NAME} in the arguments; the first is the N "
                            "the growth is fitted against (numbers > 0); several vary together, point by point")
        p.add_argument("--repeat", type=int, default=3, metavar="K",
                       help="runs per point, each a fresh process (default 3: the exponents' intervals need "
                            "repeats)")
        p.add_argument("--warm", action="store_true", help="keep the compiler caches (default: cold, fresh ones "
                                                           "per run)")
        p.add_argument("--project", metavar="NAME=V",
                       help="also project compile time and each cause to size V of the first --param")
        p.add_argument("-o", "--output", type=Path, metavar="DIR", help="sweep folder (default: a new folder under "
                                                                        "./dynaprof-runs/)")
        p.add_argument("--force", action="store_true", help="write into an existing non-empty DIR")
        add_each_run_options(p)
        p.add_argument("--quiet", "-q", action="store_true", help="only the verdict on stderr")
        add_executor_options(p)
        p.add_argument("script", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS ...]")

    def run(self, args: argparse.Namespace) -> int:
        from dynaprof.render.sweep_report import terminal_lines
        from dynaprof.run_folder.sweep_folder import finish_sweep

        check_executor_options(args)
        params = [parse_param(t) for t in args.param]
        check_params(params)
        if args.repeat < 1:
            raise DynaprofError(f"--repeat must be at least 1, got {args.repeat}")
        project_at = self._project(args.project, params[0].name)
        script = list(args.script)
        if script and script[0] == "--":
            script = script[1:]
        if not script:
            raise DynaprofError("nothing to run: dynaprof sweep --param NAME=V1,V2 script.py [args]")
        if not Path(script[0]).is_file():
            raise DynaprofError(f"can't open file {script[0]!r}: no such file")
        run_opts = each_run_options(args)
        out = prepare_out_dir(args.output or default_run_dir(Path(script[0]).stem + "-sweep"), args.force).resolve()
        sweep = Sweep(SWEEP_SCHEMA_VERSION, params, script[0], script[1:], redact_argv(["dynaprof", *args.argv]),
                      args.repeat, not args.warm, datetime.datetime.now(datetime.timezone.utc).isoformat(
                          timespec="seconds"), None, __version__, project_at=project_at)
        n = len(params[0].values)
        status = _Status(n * args.repeat, args.quiet)
        if not args.quiet:
            info(f"dynaprof sweep: {fmt.terminal_safe(script[0])}, {n} points x {fmt.plural(args.repeat, 'run')} "
                 f"-> {fmt.terminal_safe(display_path(out))}/")
        tasks: list[RunTask] = []
        labels: dict[str, tuple[SweepPoint, str]] = {}
        points: list[SweepPoint] = []  # a point goes in the sweep once a run of it came back
        for i in range(n):
            values = {p.name: p.values[i] for p in params}
            point = SweepPoint(values, size_of(params[0].values[i], params[0].name))
            points.append(point)
            target = [script[0], *substitute(script[1:], values)]
            for r in range(1, args.repeat + 1):
                key = f"{point_dir(values)}/{r}"
                tasks.append(RunTask(key, str(out / key), target, run_opts, dict(values), None, not args.warm))
                labels[key] = (point, ", ".join(f"{k}={v}" for k, v in values.items()) + f", run {r} of {args.repeat}")
        done = 0
        status.show(labels[tasks[0].key][1], done)

        def on_result(result: TaskResult) -> None:
            nonlocal done
            point, label = labels[result.key]
            record, torch_version = point_record(out, result)
            sweep.torch_version = sweep.torch_version or torch_version
            point.runs = sorted([*(x for x in point.runs if x.repeat != record.repeat), record],
                                key=lambda x: x.repeat)
            sweep.points = [p for p in points if p.runs]
            done += 1
            save_sweep(sweep, out)
            compiled = record.measures.get("total")
            took = (f"failed: {record.error}" if not record.ok else
                    f"{fmt.seconds(compiled)} compile" if compiled is not None else "nothing compiled")
            status.done(f"{label}: {took}", record.wall_s or 0.0)
            if done < len(tasks):
                status.show(f"{done} of {len(tasks)} runs back", done)

        engine = make_engine(engine_options(args, out))
        for note in engine.notes if not args.quiet else []:  # parallel runs slow each other's compiles
            info(f"dynaprof sweep: note: {note}")
        try:
            sweep.interrupted = run_all(engine, tasks, on_result)
        finally:
            engine.close()
            status.clear()
        g, written = finish_sweep(sweep, out)
        for line in terminal_lines(sweep, g):
            info(f"  {line}")
        info(f"dynaprof: wrote {display_path(out)}/: " + ", ".join(p.name for p in written)
             + f" and {fmt.plural(sum(len(p.runs) for p in sweep.points), 'run folder')}")
        if sweep.interrupted:
            info("dynaprof sweep: interrupted; the points that finished are kept")
            return 130
        return 0 if any(r.ok for p in sweep.points for r in p.runs) else 1

    @staticmethod
    def _project(text: str | None, axis: str) -> float | None:
        if text is None:
            return None
        name, sep, value = text.partition("=")
        if not sep or name.strip() != axis:
            raise DynaprofError(f"--project {text!r}: expected {axis}=V (the first --param's name)")
        return size_of(value.strip(), axis)


COMMAND = SweepCommand()
