"""``dynaprof sweep --param NAME=V1,V2,... script.py [args...]``: how compile time grows with size.

Each point and repeat is a fresh ``dynaprof run`` process (the same pipeline, one run folder each,
kept), with NAME set in its environment and ``{NAME}`` replaced in the arguments, and cold
compiler caches unless ``--warm`` (``run.cold_caches``, as ``run --repeat`` makes them). Beside the
point folders go ``sweep.json`` (rewritten after every run, so Ctrl-C keeps what finished), then
``summary.md``, ``report.html`` and ``growth.svg``. A run that fails is recorded with its exit status
and error and the sweep goes on.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from dynaprof import fmt
from dynaprof.cli.common import display_path
from dynaprof.cli.run import cold_caches
from dynaprof.errors import DynaprofError
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
#: how long an interrupted point's run may take to save what it compiled
_INTERRUPT_GRACE_S = 60.0
LOG_SUFFIX = ".log"


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


def last_error(log: Path) -> str:
    """The last non-empty line the run printed (a traceback's exception line), cut short."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return next((fmt.one_line(ln.strip(), 300) for ln in reversed(lines) if ln.strip()), "")


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


def _child_env(values: dict[str, str], caches: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(values)
    env.update(caches)
    # the point's dynaprof is this one, wherever it was imported from (after the user's own path)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), here) if p)
    return env


def run_point(out: Path, rel: str, target: list[str], values: dict[str, str], run_opts: list[str],
              cold: bool) -> tuple[PointRun, str | None, bool]:
    """One fresh ``dynaprof run`` of one point: (its record, its torch version, interrupted)."""
    run_dir = out / rel
    log = out / f"{rel}{LOG_SUFFIX}"
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(run_dir), *run_opts, "--", *target]
    interrupted = False
    start = time.perf_counter()
    with cold_caches(cold) as caches, log.open("wb") as fh:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                 env=_child_env(values, caches))
        try:
            status = child.wait()
        except KeyboardInterrupt:  # the child had the same Ctrl-C: let it save what it compiled
            interrupted = True
            try:
                status = child.wait(_INTERRUPT_GRACE_S)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                child.kill()
                status = child.wait()
    wall = fmt.stored_s(time.perf_counter() - start)
    repeat = int(rel.rsplit("/", 1)[-1])
    record = PointRun(repeat, rel, status, None, wall)
    torch_version = None
    if (run_dir / "session.json").exists():
        from dynaprof.run_folder.sweep_folder import read_run

        try:
            record.measures, record.counts, torch_version = read_run(run_dir)
        except DynaprofError as e:
            record.error = f"its session.json cannot be read: {e.message}"
    else:
        record.error = "no session.json was written"
    if status != 0:  # a run Ctrl-C cut short keeps its folder, but not its measures
        why = "interrupted (Ctrl-C)" if interrupted else last_error(log)
        record.error = f"exit status {status}" + (f": {why}" if why else "")
    return record, torch_version, interrupted


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
        p.add_argument("--sampler", choices=("builtin", "none"), default="builtin",
                       help="each run's stack sampler (the causes and phases need it; default builtin)")
        p.add_argument("--rate", type=float, metavar="HZ", help="each run's sampling rate (default: run's)")
        p.add_argument("--quiet", "-q", action="store_true", help="only the verdict on stderr")
        p.add_argument("script", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS ...]")

    def run(self, args: argparse.Namespace) -> int:
        from dynaprof.render.sweep_report import terminal_lines
        from dynaprof.run_folder.sweep_folder import finish_sweep

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
        run_opts = ["--sampler", args.sampler] + (["--rate", f"{args.rate:g}"] if args.rate is not None else [])
        out = prepare_out_dir(args.output or default_run_dir(Path(script[0]).stem + "-sweep"), args.force).resolve()
        sweep = Sweep(SWEEP_SCHEMA_VERSION, params, script[0], script[1:], redact_argv(["dynaprof", *args.argv]),
                      args.repeat, not args.warm, datetime.datetime.now(datetime.timezone.utc).isoformat(
                          timespec="seconds"), None, __version__, project_at=project_at)
        n = len(params[0].values)
        status = _Status(n * args.repeat, args.quiet)
        if not args.quiet:
            info(f"dynaprof sweep: {fmt.terminal_safe(script[0])}, {n} points x {fmt.plural(args.repeat, 'run')} "
                 f"-> {fmt.terminal_safe(display_path(out))}/")
        done = 0
        try:
            for i in range(n):
                values = {p.name: p.values[i] for p in params}
                point = SweepPoint(values, size_of(params[0].values[i], params[0].name))
                sweep.points.append(point)
                target = [script[0], *substitute(script[1:], values)]
                for r in range(1, args.repeat + 1):
                    label = ", ".join(f"{k}={v}" for k, v in values.items())
                    status.show(f"{label}, run {r} of {args.repeat}", done)
                    record, torch_version, stopped = run_point(out, f"{point_dir(values)}/{r}", target, values,
                                                               run_opts, not args.warm)
                    sweep.torch_version = sweep.torch_version or torch_version
                    point.runs.append(record)
                    done += 1
                    save_sweep(sweep, out)
                    if stopped:
                        raise KeyboardInterrupt
                    compiled = record.measures.get("total")
                    took = (f"failed: {record.error}" if not record.ok else
                            f"{fmt.seconds(compiled)} compile" if compiled is not None else "nothing compiled")
                    status.done(f"{label}, run {r} of {args.repeat}: {took}", record.wall_s or 0.0)
        except KeyboardInterrupt:
            sweep.interrupted = True
        finally:
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
