"""The one pipeline from a script or a capture journal to a written run folder.

    capture (a child process per run: ``capture.launcher``; or an in-process block: ``api``)
      -> journal.jsonl -> assemble (``ingest.assemble``: facts only)
      -> derive and write (``run_folder.writer``: attribution, session.json, every output)

``dynaprof run`` (``--repeat``, ``--counterfactual``), ``dynaprof report``, ``dynaprof.profile()``
(and so the notebook magic and the pytest plugin, which use it) all come here: nothing else reads a
journal, calls ``assemble`` or writes a run folder (``tests/unit/test_one_pipeline.py``). Nothing
here prints or exits: lines for the user go to the caller's ``say`` (every entry point passes
:func:`info`), failures are :class:`~dynaprof.errors.DynaprofError` or an :class:`Outcome`'s ``error``.

``--repeat N`` runs the script N times, one fresh process each, with cold compiler caches
(``executors.run_task.cold_caches``) unless ``--warm``, and combines the sessions (``analysis.repeats``).
``--counterfactual`` runs it once more with every parametrization folded (``capture.hooks.unparametrize``),
cold caches, its output kept in ``counterfactual/output.log`` while it runs; what it built is
compared with the profiled run's kernels when that run is assembled (``ingest.kernel_match``), its
folder removed after, its figures kept in ``Session.counterfactual``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dynaprof.errors import DynaprofError
from dynaprof.fmt import plural, seconds, stored_s
from dynaprof.model.capture_options import CaptureOptions
from dynaprof.model.journal import JOURNAL_FILE

if TYPE_CHECKING:
    from dynaprof.capture.child import ChildConfig
    from dynaprof.capture.launcher import LaunchResult
    from dynaprof.capture.pyspy import PySpy
    from dynaprof.executors import Engine
    from dynaprof.ingest.assemble import ParentFacts
    from dynaprof.ingest.kernel_match import PlainKernels, ReplayKernels
    from dynaprof.model.session import Session
    from dynaprof.render.base import RenderOptions

Say = Callable[[str], None]

#: the folder under the run folder holding each ``--repeat`` run's journal (and cProfile files)
REPEATS_DIR = "repeats"
#: the folder under the run folder the counterfactual run writes into while it runs
COUNTERFACTUAL_DIR = "counterfactual"


@dataclass
class Outcome:
    """What a pipeline run made: the session, the files written and the renderers' notes, or the
    ``error`` that stopped the writing (the journal is then kept for ``dynaprof report``)."""

    session: Session
    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    #: the script's exit status (a run of a script)
    exit_status: int = 0


def info(message: str) -> None:
    """The entry points' ``say``: progress and results go to stderr, so the profiled script owns stdout."""
    print(message, file=sys.stderr, flush=True)


# -- journal -> session -> run folder ----------------------------------------------------------------


def session_from_journal(journal: Path, facts: ParentFacts, plain: PlainKernels | None = None,
                         replay: ReplayKernels | None = None) -> Session:
    """The session of facts a capture journal holds (``plain``: a counterfactual run's kernels;
    ``replay``: what the Inductor replay found)."""
    from dynaprof.capture.journal import read_journal
    from dynaprof.ingest.assemble import assemble

    return assemble((rec for _, rec in read_journal(journal)), facts, plain, replay)


def rebuild_from_journal(run_dir: Path) -> Session:
    """The session of a run folder whose dynaprof process died before saving (only its journal is there)."""
    from dynaprof.ingest.assemble import ParentFacts

    facts = ParentFacts(
        command=["dynaprof", "report", str(run_dir)],
        exit_status=None,
        run_dir=str(run_dir.resolve()),
        notes=["rebuilt from the journal of a dynaprof run that did not finish saving"],
    )
    return session_from_journal(run_dir / JOURNAL_FILE, facts)


def write(
    session: Session,
    out_dir: Path,
    options: RenderOptions,
    *,
    run_dir: Path | None = None,
    only: list[str] | None = None,
    say: Say | None = None,
    stored: bool = False,
    render: bool = True,
) -> tuple[list[Path], list[str]]:
    """Derive and write ``session`` into ``out_dir`` (``run_folder.writer.write_run_folder``; with
    ``render=False`` session.json alone): the paths written and the renderers' notes."""
    from dynaprof.run_folder.writer import write_run_folder, write_session_only

    if not render:
        return write_session_only(session, out_dir), []
    return write_run_folder(session, out_dir, options, run_dir=run_dir, only=only, progress=say, stored=stored)


def journal_to_run_folder(
    journal: Path, facts: ParentFacts, options: RenderOptions, *, render: bool = True, say: Say | None = None
) -> Outcome:
    """An in-process block's journal to its run folder (the journal's folder); the journal is
    removed once the folder is written, kept when writing failed."""
    session = session_from_journal(journal, facts)
    try:
        written, notes = write(session, journal.parent, options, say=say, render=render)
    except DynaprofError as e:
        return Outcome(session, error=e.message)
    journal.unlink(missing_ok=True)
    return Outcome(session, written, notes)


# -- a script, run and captured ----------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptRun:
    """What ``dynaprof run`` runs and how it captures (its options, checked by the CLI)."""

    kind: str  # "script" or "module"
    target: str
    args: list[str]
    #: dynaprof's own command line, secrets redacted (``model.environment.redact_argv``)
    command: list[str]
    sampler: str
    rate: float
    native: bool = False
    #: the capture's switches (``model.capture_options``: time_calls, replay_graphs...), as given;
    #: the sampler, rate and folders below are the pipeline's and go in at launch
    capture: CaptureOptions = field(default_factory=CaptureOptions)
    cprofile: bool = False
    torch_trace: Path | None = None
    repeat: int = 1
    warm: bool = False
    counterfactual: bool = False
    quiet: bool = False
    #: no live progress line (a torchrun rank)
    no_progress: bool = False
    #: the rate adapts to what a sample costs here (no explicit ``--rate``); and that cost's floor
    #: (``capture.signal_cost``), measured by ``run_script``
    adapt_rate: bool = False
    signal_floor_s: float | None = None


@dataclass
class _Captured:
    result: LaunchResult
    session: Session | None
    journal: Path


def run_script(run: ScriptRun, run_dir: Path, options: RenderOptions, say: Say) -> Outcome:
    """Run the script (``run.repeat`` times), assemble, and write the run folder ``run_dir``.

    DynaprofError when the script did not start; a failed write is the Outcome's ``error`` (the
    script ran: its exit status still counts)."""
    from dynaprof.render.registry import preload as preload_renderers

    # the renderers' imports (networkx...) on the idle parent while the script runs, not after it
    if run.sampler == "builtin" and run.signal_floor_s is None:
        from dynaprof.capture.signal_cost import floor_s, known_floor

        # before the script (it would disturb it); a torchrun rank never measures (the ranks would
        # all measure at once, disturbing each other): it uses the floor already known, if any. A
        # fixed --rate measures nothing: a known floor only says what sampling cost
        measure = run.adapt_rate and not run.no_progress
        floor = floor_s(say if not run.quiet else lambda _m: None) if measure else known_floor()
        run = dataclasses.replace(run, signal_floor_s=floor)
    warm = threading.Thread(target=preload_renderers, name="dynaprof-preload", daemon=True)
    warm.start()
    runs: list[_Captured] = []
    for i in range(1, run.repeat + 1):
        runs.append(_capture_once(run, run_dir, i, say))
        if runs[-1].session is None or runs[-1].result.exit_status != 0:
            break  # a failed run is reported as it is; the rest would fail the same way
    warm.join()
    result, session = runs[-1].result, runs[-1].session
    if session is None:
        raise DynaprofError(
            f"the script did not start ({run.target}); exit status {result.exit_status}", result.exit_status or 1
        )
    if run.repeat > 1:
        session, result = _combine(run, runs)
    try:
        written, notes = write(session, run_dir, options, say=say)
    except DynaprofError as e:
        return Outcome(session, error=e.message, exit_status=result.exit_status)
    _remove_journals(run_dir, [c.journal for c in runs], run.repeat > 1)
    return Outcome(session, written, notes, exit_status=result.exit_status)


def run_repeats_on(run: ScriptRun, run_dir: Path, options: RenderOptions, say: Say, engine: Engine,
                   child_options: list[str]) -> Outcome:
    """``run --repeat N --executor E``: each repeat a fresh ``dynaprof run`` (``child_options``)
    on the engine's workers, its whole run folder kept at ``run_dir/repeats/i``; then one session of
    those that came back (``analysis.repeats.combine``), written to ``run_dir`` as ``--repeat``
    writes it in one process."""
    from dynaprof.analysis.repeats import combine
    from dynaprof.executors import run_all
    from dynaprof.executors.run_task import RunTask, TaskResult
    from dynaprof.model.store import load_session

    target = ["-m", run.target, *run.args] if run.kind == "module" else [run.target, *run.args]
    tasks = [RunTask(f"{REPEATS_DIR}/{i}", str(run_dir / REPEATS_DIR / str(i)), target, child_options,
                     cold=not run.warm) for i in range(1, run.repeat + 1)]
    results: dict[str, TaskResult] = {}

    def on_result(result: TaskResult) -> None:
        results[result.key] = result
        if not run.quiet:
            said = "done" if result.exit_status == 0 else f"failed: {result.error}"
            say(f"dynaprof: {result.key} on the {engine.name} executor: {said} ({len(results)} of {len(tasks)})")

    for note in engine.notes if not run.quiet else []:
        say(f"dynaprof: note: {note}")
    interrupted = run_all(engine, tasks, on_result)
    sessions, failed = [], []
    for task in tasks:
        result = results.get(task.key)
        folder = Path(task.run_dir)
        if result is not None and (folder / "session.json").is_file():
            sessions.append(load_session(folder))
        if result is None or result.exit_status != 0:
            failed.append(f"{task.key}: {result.error if result is not None else 'did not come back'}")
    if not sessions:
        raise DynaprofError(f"--repeat {run.repeat}: no run came back with a session ({'; '.join(failed)})",
                            next((r.exit_status for r in results.values() if r.exit_status), None) or 1)
    session = combine(sessions, cold=not run.warm)
    if failed or interrupted:
        session.capture.warnings.append(
            f"--repeat {run.repeat}: {len(sessions)} of {run.repeat} runs came back"
            + (" (interrupted)" if interrupted else "") + (f"; {'; '.join(failed)}" if failed else ""))
    try:
        written, notes = write(session, run_dir, options, say=say)
    except DynaprofError as e:
        return Outcome(session, error=e.message, exit_status=130 if interrupted else 1)
    status = 130 if interrupted else next((r.exit_status or 1 for r in results.values() if r.exit_status != 0), 0)
    return Outcome(session, written, notes, exit_status=status)


def _combine(run: ScriptRun, runs: list[_Captured]) -> tuple[Session, LaunchResult]:
    """``--repeat``: one session of the runs made, and the first failed run's result (or the last's)."""
    from dynaprof.analysis.repeats import combine

    session = combine([c.session for c in runs if c.session is not None], cold=not run.warm)
    result = next((c.result for c in runs if c.result.exit_status != 0), runs[-1].result)
    if len(runs) < run.repeat:
        session.capture.warnings.append(
            f"--repeat {run.repeat}: stopped after run {len(runs)}, which exited with status "
            f"{result.exit_status}; the session holds the {len(runs)} runs made"
        )
    return session, result


def _remove_journals(run_dir: Path, journals: list[Path], repeated: bool) -> None:
    for j in journals:
        j.unlink(missing_ok=True)
        if j.parent != run_dir:
            with contextlib.suppress(OSError):  # kept when it holds cProfile files
                j.parent.rmdir()
    if repeated:
        with contextlib.suppress(OSError):
            (run_dir / REPEATS_DIR).rmdir()


def _child_config(run: ScriptRun, journal: Path, where: Path) -> ChildConfig:
    from dynaprof.capture.child import ChildConfig

    capture = dataclasses.replace(
        run.capture,
        sampler=run.sampler if run.sampler != "py-spy" else "none",
        rate_hz=run.rate,
        adapt_rate=run.adapt_rate,
        signal_floor_s=run.signal_floor_s,
        cprofile_dir=str(where / "cprofile") if run.cprofile else None,
        torch_trace_dir=str(run.torch_trace.resolve()) if run.torch_trace else None,
    )
    return ChildConfig(journal=str(journal), kind=run.kind, target=run.target, args=run.args, capture=capture)


def _capture_once(run: ScriptRun, run_dir: Path, i: int, say: Say) -> _Captured:
    """Run ``i`` of ``run.repeat``: launch the child (py-spy beside it), then assemble its journal."""
    from dynaprof.capture.launcher import launch
    from dynaprof.capture.progress import follow_progress
    from dynaprof.executors.run_task import cold_caches

    where = run_dir if run.repeat == 1 else run_dir / REPEATS_DIR / str(i)
    where.mkdir(parents=True, exist_ok=True)
    journal = where / JOURNAL_FILE
    try:  # the child appends to it; check here that the folder takes writes at all
        journal.write_bytes(b"")
    except OSError as e:
        raise DynaprofError(f"cannot write {journal}: {e.strerror or e}") from e
    if run.repeat > 1 and not run.quiet:
        say(f"dynaprof: repeat {i} of {run.repeat}" + ("" if run.warm else " (cold compiler caches)"))
    cfg = _child_config(run, journal, where)
    pyspy = _pyspy(run, run_dir)
    progress = follow_progress(journal, run.quiet or run.no_progress)
    replay = None
    try:
        with cold_caches(run.repeat > 1 and not run.warm) as caches:
            result = launch(cfg, on_started=pyspy.attach if pyspy else None, progress=progress, extra_env=caches)
            if progress is not None:
                progress.stop()
                progress = None
            # in the run's compiler caches (Inductor's one-time probes are there), before they go
            if run.capture.replay_graphs and result.signal is None:
                replay = _replay(journal, where, caches, run.quiet, say)
    finally:
        if progress is not None:
            progress.stop()
    notes = pyspy.finish() if pyspy else []
    plain = None
    if run.counterfactual and result.exit_status == 0 and result.signal is None:
        with cold_caches() as fresh:
            plain = _run_plain(cfg, run_dir, fresh, run.quiet, say)
    if not journal.exists():
        return _Captured(result, None, journal)
    session = session_from_journal(journal, _facts(run, result, run_dir, notes), plain, replay)
    for name, value in caches.items():  # ours, not the user's: --repeat makes them again
        if session.run.env is not None and session.run.env.get(name) == value:
            del session.run.env[name]
    if pyspy is not None:
        pyspy.merge_into(session)
    return _Captured(result, session, journal)


def _replay(journal: Path, where: Path, caches: dict[str, str], quiet: bool, say: Say) -> ReplayKernels | None:
    """The Inductor replay of the graphs with parametrizations the run kept (``capture.replay``),
    in a process of its own; None (said) where there were none or it failed."""
    import json
    import os

    from dynaprof.capture.journal import read_journal
    from dynaprof.capture.replay import has_graphs, launch_replay
    from dynaprof.ingest.kernel_match import read_replay

    if not has_graphs(journal):
        return None  # no graph with parametrizations went to Inductor: nothing to replay, no process
    graphs, out, log = where / "replay-graphs.json", where / "replay.json", where / "replay.log"
    if not quiet:
        say("dynaprof: replaying the graphs with parametrizations, folded, through Inductor (no kernel built)")
    try:
        graphs.write_text(json.dumps([rec for _, rec in read_journal(journal)
                                      if rec is not None and rec.get("t") == "replay_graph"]))  # fmt: skip
        data, error = launch_replay(graphs, out, log, {**os.environ, **caches})
        replay = read_replay(data) if error is None else None
    except (OSError, ValueError) as e:
        replay, error = None, str(e)
    finally:
        for f in (graphs, out, log):
            f.unlink(missing_ok=True)
    if replay is None:
        say(f"dynaprof: the Inductor replay failed ({error}); fused kernels are split by node only")
        return None
    if not quiet:
        failed = f", {len(replay.failed)} not replayable" if replay.failed else ""
        say(f"dynaprof: replay: {plural(replay.graphs, 'graph')} in {seconds(replay.seconds)}, "
            f"{plural(replay.plain.count, 'kernel')} without the parametrizations{failed}")
    return replay


def _pyspy(run: ScriptRun, run_dir: Path) -> PySpy | None:
    if run.sampler != "py-spy":
        return None
    from dynaprof.capture.pyspy import PySpy

    return PySpy(run_dir, run.rate, run.native)


def _facts(run: ScriptRun, result: LaunchResult, run_dir: Path, notes: list[str]) -> ParentFacts:
    from dynaprof.ingest.assemble import ParentFacts

    return ParentFacts(
        command=run.command,
        exit_status=result.exit_status,
        signal=result.signal,
        wall_s=stored_s(result.wall_s),
        sampler=run.sampler,
        requested_hz=run.rate if run.sampler != "none" else None,
        native=run.native,
        cprofile=run.cprofile,
        torch_trace_dir=str(run.torch_trace) if run.torch_trace else None,
        run_dir=str(run_dir),
        notes=notes,
    )


def _run_plain(cfg: ChildConfig, run_dir: Path, caches: dict[str, str], quiet: bool, say: Say) -> PlainKernels | None:
    """``--counterfactual``: the script again with every parametrization folded (``caches``: fresh
    compiler cache folders for it); its kernels and figures, or None (said) where it failed."""
    from dynaprof.capture.journal import read_journal
    from dynaprof.capture.launcher import launch
    from dynaprof.ingest.assemble import ParentFacts, assemble_plain

    where = run_dir / COUNTERFACTUAL_DIR
    where.mkdir(parents=True, exist_ok=True)
    journal, log = where / JOURNAL_FILE, where / "output.log"
    journal.write_bytes(b"")
    plain_cfg = dataclasses.replace(cfg, journal=str(journal), capture=dataclasses.replace(
        cfg.capture, sampler="builtin", rate_hz=CaptureOptions.rate_hz, cprofile_dir=None, torch_trace_dir=None,
        inline_profile=False, time_calls=False, fold_parametrizations=True))
    if not quiet:
        say("dynaprof: counterfactual run: the script again with every parametrization folded, cold caches")
    try:
        result = launch(plain_cfg, extra_env=caches, output=log)
        facts = ParentFacts(command=[], exit_status=result.exit_status, signal=result.signal,
                            wall_s=stored_s(result.wall_s), sampler="builtin")  # fmt: skip
        _, plain = assemble_plain((rec for _, rec in read_journal(journal)), facts)
        if result.exit_status != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            say(f"dynaprof: the counterfactual run exited with status {result.exit_status}"
                + (f" ({tail[0][:200]})" if tail else "") + "; its kernels are not compared")  # fmt: skip
            return None
    finally:
        shutil.rmtree(where, ignore_errors=True)
    if not plain.folded:
        say("dynaprof: the counterfactual run found no parametrization to fold in what torch.compile was given; "
            "its kernels are not compared")  # fmt: skip
        return None
    if not quiet:
        say(f"dynaprof: counterfactual run: {plural(len(plain.folded), 'parametrization')} folded, "
            f"{seconds(plain.compile_s)} compile, {plural(plain.count, 'Inductor kernel')}")
    return plain
