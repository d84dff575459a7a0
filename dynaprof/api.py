"""Profiling from inside Python: ``with dynaprof.profile("DIR") as prof: ...``.

The same capture as ``dynaprof run`` (hooks, sampler, journal; ``dynaprof.capture.core``), in the
current process, for a block of code. On exit the journal is assembled into a session and every
output ``dynaprof report`` writes is rendered into the run folder. Documented in
docs/python-api.md; the stable surface is what ``dynaprof/__init__.py`` exports.
"""

from __future__ import annotations

import atexit
import fnmatch
import functools
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from dynaprof.errors import DynaprofError
from dynaprof.fmt import plural, stored_s
from dynaprof.model.journal import JOURNAL_FILE
from dynaprof.run_folder.location import RUNS_DIR, default_run_dir, prepare_out_dir

if TYPE_CHECKING:
    from dynaprof.analysis.growth import Growth
    from dynaprof.capture.core import Capture
    from dynaprof.model.session import Session
    from dynaprof.model.sweep import Sweep

P = ParamSpec("P")
R = TypeVar("R")


#: what a run folder holds (top-level names): cleared when a new run replaces an earlier one in
#: the same folder (a re-run notebook cell, a test re-run with ``--dynaprof``); anything else the
#: user put in the folder is left alone
RUN_OUTPUTS = (
    "session.json", JOURNAL_FILE, "summary.txt", "summary.md", "report.html", "*.svg", "*.dot",
    "*.folded", "*.folded.gz", "speedscope.json", "speedscope.json.gz", "trace.json", "trace.json.gz",
    "*.prof", "flames", "frames", "cprofile", "snakeviz*",
)


class ProfileError(DynaprofError):
    """Misuse of ``dynaprof.profile`` (nested profiles, a non-empty folder, bad options)."""


def _api_switches(given: dict[str, Any]) -> dict[str, bool]:
    """``profile()``'s switch keywords, checked against their one declaration; ProfileError (one
    line) naming one that is unknown or that only ``dynaprof run`` offers."""
    from dynaprof.model.capture_options import API, switches

    offered = {s.name for s in switches(API)}
    elsewhere = {s.name for s in switches()} - offered
    for name, value in given.items():
        if name in elsewhere:
            raise ProfileError(f"{name}: a `dynaprof run` option (the script in a process of its own); "
                               f"profile() takes {', '.join(sorted(offered))}")
        if name not in offered:
            raise ProfileError(f"profile() got an unexpected keyword {name!r} (its switches: "
                               f"{', '.join(sorted(offered))})")
        if not isinstance(value, bool):
            raise ProfileError(f"{name} must be True or False, got {value!r}")
    return dict(given)


def clear_previous_run(run_dir: Path) -> bool:
    """Remove an earlier dynaprof run from ``run_dir`` (only what a run writes); False, and
    nothing removed, when the folder does not hold a run."""
    if not ((run_dir / "session.json").is_file() or (run_dir / JOURNAL_FILE).is_file()):
        return False
    for entry in list(run_dir.iterdir()):
        if any(fnmatch.fnmatch(entry.name, pat) for pat in RUN_OUTPUTS):
            try:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            except OSError as e:
                raise ProfileError(f"cannot replace the earlier run in {run_dir}: {e.strerror or e}") from e
    return True


def _caller_label() -> str:
    """``file.py:LINE`` of the first frame outside dynaprof (and contextlib), for the run target."""
    f = sys._getframe(1)
    here = os.path.dirname(os.path.abspath(__file__))
    while f is not None:
        fn = f.f_code.co_filename
        if not os.path.abspath(fn).startswith(here) and not fn.endswith("contextlib.py"):
            return f"{os.path.basename(fn)}:{f.f_lineno}"
        f = f.f_back  # type: ignore[assignment]
    return "python"


def _stem(label: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", label.rsplit(":", 1)[0]).strip("-.")
    return (stem.removesuffix(".py") or "profile")[:60]


class Profile:
    """Profile every ``torch.compile`` compile of a block into the run folder ``path``.

    ``with dynaprof.profile("runs/x") as prof: ...``, ``@dynaprof.profile()`` on a function, or
    ``prof = dynaprof.profile().start()`` ... ``prof.stop()``. Each start profiles every compile in
    this process, on any thread, until the matching stop; stop writes the run folder and sets
    ``session``. A profile can be started again after it stopped (a new run: the folder must then
    be empty, or ``force=True``). Without ``path``, a new folder under ``./dynaprof-runs/``. A
    non-empty folder is refused unless ``force``. ``render=False`` writes ``session.json`` only
    (``dynaprof report DIR`` renders the rest later). The capture's switches go as keywords, by name
    (``model.capture_options``): ``time_calls=True`` also times each call of the compiled code
    (host wall time; two clock reads a call), ``use_signal=False`` samples from a thread only (a
    program that sets SIGALRM itself)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        force: bool = False,
        sampler: Literal["builtin", "none"] = "builtin",
        rate: float | None = None,
        cprofile: bool = False,
        label: str | None = None,
        quiet: bool = True,
        max_rows: int = 25,
        exports: Literal["auto", "gzip", "plain", "none"] = "auto",
        render: bool = True,
        _option_hint: str = "force=True",
        **switches: bool,
    ) -> None:
        chosen: str = sampler
        if chosen not in ("builtin", "none"):
            why = " (py-spy attaches from outside: use `dynaprof run --sampler py-spy`)" if chosen == "py-spy" else ""
            raise ProfileError(f"sampler must be 'builtin' or 'none', got {chosen!r}{why}")
        from dynaprof.model.capture_options import chosen_rate

        try:  # None: up to CaptureOptions.rate_hz, within the sampler's budget
            fixed, self.adapt_rate = chosen_rate(rate, sampler)
        except ValueError as e:
            raise ProfileError(f"rate must be {e}") from None
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise ProfileError(f"max_rows must be a whole number >= 1, got {max_rows!r}")
        if exports not in ("auto", "gzip", "plain", "none"):
            raise ProfileError(f"exports must be 'auto', 'gzip', 'plain' or 'none', got {exports!r}")
        self.path = None if path is None else Path(path)
        self.force = force
        self.sampler = sampler
        self.rate = fixed
        self.cprofile = cprofile
        #: the capture's switches given (``model.capture_options``: ``time_calls=True``...)
        self.switches = _api_switches(switches)
        self.label = label
        self.quiet = quiet
        self.max_rows = max_rows
        self.exports = exports
        self.render = render
        self._hint = _option_hint
        #: the run folder of the current (or last) run
        self.run_dir: Path | None = None
        #: files the last stop wrote, and the renderers' notes
        self.written: list[Path] = []
        self.notes: list[str] = []
        self._session: Session | None = None
        self._capture: Capture | None = None
        self._pid: int | None = None
        self._t0 = 0.0
        self._target = ""

    # -- lifecycle ----------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._capture is not None and self._pid == os.getpid()

    def start(self) -> Profile:
        """Start profiling; returns the profile. ProfileError when another profile is active."""
        from dynaprof.capture.core import IN_PROCESS, CaptureBusy, CaptureOptions, in_process_start_record
        from dynaprof.capture.journal import JournalWriter
        from dynaprof.capture.signal_cost import known_floor
        from dynaprof.model.capture_options import switched

        if self.running:
            raise ProfileError("this profile is already running")
        self._refuse_if_busy(IN_PROCESS)
        target = self.label or f"<in-process: {_caller_label()}>"
        run_dir = self._prepare(self.path or default_run_dir(_stem(self.label or _caller_label()))).resolve()
        journal_path = run_dir / JOURNAL_FILE
        try:
            journal_path.write_bytes(b"")
            journal = JournalWriter(journal_path)
        except OSError as e:
            raise ProfileError(f"cannot write {journal_path}: {e.strerror or e}") from e
        options = CaptureOptions(
            sampler=self.sampler,
            rate_hz=self.rate,
            adapt_rate=self.adapt_rate,
            signal_floor_s=known_floor(),  # adapts the rate, or only says what sampling cost
            cprofile_dir=str(run_dir / "cprofile") if self.cprofile else None,
        )
        options = switched({**self.switches, "use_signal": self.switches.get("use_signal", True)
                            and self._use_signal()}, options)
        t0_ns = time.time_ns()
        try:
            cap = IN_PROCESS.begin(journal, t0_ns, options, in_process_start_record(t0_ns, target))
        except CaptureBusy as e:
            journal.close()
            journal_path.unlink(missing_ok=True)
            raise ProfileError(f"dynaprof.profile(): {e}") from None
        self.run_dir, self._capture, self._pid, self._target = run_dir, cap, os.getpid(), target
        self._t0 = time.perf_counter()
        self._session, self.written, self.notes = None, [], []
        atexit.register(self._at_exit)
        return self

    def _use_signal(self) -> bool:
        return True

    def _refuse_if_busy(self, state: Any) -> None:
        if state.owner is not None:
            raise ProfileError(
                f"dynaprof.profile(): this process is already profiled by `{state.owner}`, which records "
                "every compile; drop the profile() block or run the script with plain python"
            )
        if state.active is not None:
            raise ProfileError(
                "dynaprof.profile(): a profile is already active in this process (profiles do not nest; "
                "the outer one already records every compile, on every thread)"
            )

    def _prepare(self, path: Path) -> Path:
        return prepare_out_dir(path, self.force, self._hint, ProfileError)

    def stop(self) -> Session:
        """Stop profiling, write the run folder, and return the session."""
        if self._capture is None:
            raise ProfileError("this profile is not running: start it with `with dynaprof.profile(...)`, "
                               "as a decorator, or with prof.start()")
        if self._pid != os.getpid():
            raise ProfileError("this profile was started in another process (before a fork); only that "
                               "process can stop it")
        return self._finish("exited")

    def _finish(self, reason: str) -> Session:
        from dynaprof.capture.core import IN_PROCESS
        from dynaprof.ingest.assemble import ParentFacts
        from dynaprof.pipeline import info, journal_to_run_folder
        from dynaprof.render.base import RenderOptions

        cap, run_dir = self._capture, self.run_dir
        assert cap is not None and run_dir is not None
        self._capture = None
        try:
            atexit.unregister(self._at_exit)
        except Exception:
            pass
        IN_PROCESS.end(cap, None, reason)
        facts = ParentFacts(
            command=[],
            exit_status=None,
            wall_s=stored_s(time.perf_counter() - self._t0),
            sampler=self.sampler,
            requested_hz=self.rate if self.sampler != "none" else None,
            cprofile=self.cprofile,
            run_dir=str(run_dir),
            notes=list(self._notes()),
        )
        options = RenderOptions(max_rows=self.max_rows, exports=self.exports)
        out = journal_to_run_folder(run_dir / JOURNAL_FILE, facts, options, render=self.render, say=info)
        session = self._session = out.session
        if out.error is not None:  # the program goes on; the journal is kept for `dynaprof report`
            sys.stderr.write(f"dynaprof: error: {out.error}; the capture journal is kept: re-run "
                             f"`dynaprof report {run_dir}` once there is space\n")
            return session
        self.written, self.notes = out.written, out.notes
        if not self.quiet:
            n = len(session.frames)
            sys.stderr.write(f"dynaprof: {plural(n, 'compiled frame')} profiled -> {run_dir}/ "
                             f"(open {run_dir / 'report.html'})\n")
        return session

    def _notes(self) -> list[str]:
        return []

    def _at_exit(self) -> None:
        """A profile still running when the interpreter exits is saved then."""
        if self.running:
            try:
                self._finish("exited")
            except Exception as e:
                sys.stderr.write(f"dynaprof: could not save the profile at exit: {type(e).__name__}: {e}\n")

    # -- results ----------------------------------------------------------------------------------
    @property
    def session(self) -> Session:
        """The typed session of the last run (``dynaprof.Session``)."""
        if self._session is None:
            raise ProfileError("no profile yet: the session is there once the profiled block has ended")
        return self._session

    def summary(self) -> str:
        """The terminal summary of the last run, as ``dynaprof run`` prints it."""
        from dynaprof.render.terminal import summary_text

        return summary_text(self.session, self.max_rows)

    # -- forms --------------------------------------------------------------------------------------
    def __enter__(self) -> Profile:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        if self._capture is None or self._pid != os.getpid():
            return False  # a forked child leaving the block: its parent saves the profile
        if exc_type is None or issubclass(exc_type, SystemExit):
            reason = "exited"
        elif issubclass(exc_type, KeyboardInterrupt):
            reason = "interrupted"
        else:
            reason = "exception"
        if exc_type is None:
            self._finish(reason)
            return False
        try:  # the block's exception is what the caller sees, whatever saving does
            self._finish(reason)
        except Exception as e:
            sys.stderr.write(f"dynaprof: could not save the profile: {type(e).__name__}: {e}\n")
        return False

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        """As a decorator: each call of ``fn`` is one profiled run."""

        @functools.wraps(fn)
        def profiled(*args: P.args, **kwargs: P.kwargs) -> R:
            with self:
                return fn(*args, **kwargs)

        return profiled

    def __repr__(self) -> str:
        state = "running" if self.running else ("done" if self._session is not None else "not started")
        return f"<dynaprof.Profile {state} {self.run_dir or self.path or RUNS_DIR + '/...'}>"


#: ``dynaprof.profile(...)`` makes a :class:`Profile` (one signature, one set of defaults)
profile = Profile


def load_session(path: str | os.PathLike[str]) -> Session:
    """Load a run folder or a ``session.json`` (``dynaprof.SessionError``, a ProfileError's sibling,
    when it is missing, corrupt or from a newer dynaprof)."""
    from dynaprof.model.store import load_session as load

    return load(Path(path))


class SweepResult:
    """What ``dynaprof.sweep()`` made: the sweep (as in ``sweep.json``), its growth fit and its folder."""

    def __init__(self, sweep: Sweep, growth: Growth, path: Path) -> None:
        self.sweep, self.growth, self.path = sweep, growth, path

    def verdict(self) -> list[str]:
        """The growth in words (``analysis.growth.verdict``)."""
        from dynaprof.analysis.growth import verdict

        return verdict(self.growth)

    def assert_growth(self, max_growth: float | None = None, **named: float) -> None:
        """AssertionError when an exponent's interval lies above its bound, as ``dynaprof check
        SWEEP --max-growth`` decides: ``max_growth`` for compile time and every cost over 5% of it,
        ``guards=1.0``, ``restart_waste=1.5``... for one measure (``_`` for a space)."""
        from dynaprof.analysis.growth_gate import check_growth

        result = check_growth(self.growth, max_growth, {k.replace("_", " "): v for k, v in named.items()})
        if result.unknown:
            raise ProfileError(f"no fitted measure named {', '.join(map(repr, result.unknown))} in this sweep")
        if result.breaches:
            raise AssertionError("compile-time growth over budget: " + "; ".join(b.message for b in result.breaches))


def sweep(fn: Callable[[float], object], sizes: Sequence[float], *, repeat: int = 3,
          path: str | os.PathLike[str] | None = None, name: str = "N", force: bool = False,
          project: float | None = None) -> SweepResult:
    """Call ``fn(size)`` (a function that builds and compiles a model of that size, and runs it)
    ``repeat`` times at each size, each call profiled into a run folder of its own (session.json
    only: ``dynaprof report`` renders one), after ``torch.compiler.reset()``; then fit how compile
    time grows (``dynaprof sweep``'s fit and outputs). In this process: compiler caches on disk are
    not made cold (``dynaprof sweep`` runs each point in a fresh process with cold ones). A call
    that raises is recorded with its error and the sweep goes on."""
    import torch  # the public reset: every call compiles from scratch, whatever the last one left

    from dynaprof.model import sweep as sw
    from dynaprof.run_folder.sweep_folder import finish_sweep, measured

    params = [sw.SweepParam(name, [f"{s:g}" for s in sizes])]
    sw.check_params(params)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ProfileError(f"repeat must be a whole number >= 1, got {repeat!r}")
    label = getattr(fn, "__qualname__", repr(fn))
    out = prepare_out_dir(Path(path) if path is not None else default_run_dir(_stem(label) + "-sweep"), force,
                          "force=True", ProfileError).resolve()
    result = sw.Sweep(sw.SWEEP_SCHEMA_VERSION, params, label, [], ["dynaprof.sweep", label], repeat, False,
                   time.strftime("%Y-%m-%dT%H:%M:%S%z"), torch.__version__, _version(), project_at=project)
    for size, text in zip(sizes, params[0].values, strict=True):
        point = sw.SweepPoint({name: text}, float(size))
        result.points.append(point)
        for r in range(1, repeat + 1):
            rel = f"{sw.point_dir(point.values)}/{r}"
            torch.compiler.reset()
            prof = Profile(out / rel, force=True, render=False, label=f"{label}({name}={text})")
            start = time.perf_counter()
            run = sw.PointRun(r, rel, 0)
            try:
                with prof:
                    fn(size)
            except Exception as e:  # the sweep goes on; the error is what the point says
                run.exit_status, run.error = None, f"{type(e).__name__}: {e}"
            run.wall_s = stored_s(time.perf_counter() - start)
            if run.error is None:
                run.measures, run.counts = measured(prof.session)
            point.runs.append(run)
    g, _ = finish_sweep(result, out)
    return SweepResult(result, g, out)


def _version() -> str:
    from dynaprof.version import __version__

    return __version__
