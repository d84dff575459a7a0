"""Where the runs of ``run --repeat``, ``sweep`` and ``suite`` happen: this machine's worker
processes (``local_pool``), a Slurm cluster through submitit (``submitit_slurm``) or a Ray cluster
(``ray_tasks``). Each run is a :class:`~dynaprof.executors.run_task.RunTask`: a fresh ``dynaprof
run`` process with cold compiler caches, made on the worker by ``run_task.run_task``.

The engines are used through their own APIs; nothing here schedules, queues or talks to a worker.
:func:`run_all` is the one loop over an engine's futures: a run whose process or worker died is
recorded with its reason and submitted once more; Ctrl-C cancels what has not started and keeps
every result that came back. Slurm and Ray are optional extras (``dynaprof[slurm]``,
``dynaprof[ray]``); without one, :func:`make_engine` says which to install.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from dynaprof.errors import DynaprofError
from dynaprof.executors.engine_options import EngineOptions as EngineOptions
from dynaprof.executors.engine_options import missing_extra as missing_extra
from dynaprof.executors.run_task import RunTask, TaskResult, unpack

EXECUTORS = ("local", "slurm", "ray")
#: how often the loop looks for finished runs (each run takes seconds at least)
POLL_S = 0.2


class Future(Protocol):
    def done(self) -> bool: ...

    def result(self) -> TaskResult:
        """The run's result; an engine's failure (a lost worker) as a result with ``exit_status`` None."""
        ...

    def cancel(self) -> None: ...


class Engine(Protocol):
    name: str
    #: what a report should say about where and how the runs ran (parallel runs slow each other...)
    notes: list[str]

    def submit(self, tasks: Sequence[RunTask]) -> Sequence[Future]: ...

    def close(self) -> None: ...


def make_engine(options: EngineOptions) -> Engine:
    """The engine ``options.kind`` names, started; DynaprofError naming the extra when it is missing."""
    if options.workers < 1:
        raise DynaprofError(f"--workers must be at least 1, got {options.workers}")
    if options.kind == "local":
        from dynaprof.executors.local_pool import LocalPool

        return LocalPool(options.workers)
    if options.kind == "slurm":
        from dynaprof.executors.submitit_slurm import SlurmEngine

        return SlurmEngine(options)
    if options.kind == "ray":
        from dynaprof.executors.ray_tasks import RayEngine

        return RayEngine(options)
    raise DynaprofError(f"--executor must be one of {', '.join(EXECUTORS)}, got {options.kind!r}")


def run_all(engine: Engine, tasks: Sequence[RunTask], on_result: Callable[[TaskResult], None],
            on_retry: Callable[[TaskResult], None] | None = None) -> bool:
    """Run ``tasks`` on ``engine``, calling ``on_result`` with each final result as it comes back
    (in the caller's thread, so it may save state; it may be called twice for one key, after a
    Ctrl-C, so it keeps the last). A run that died is retried once; its second
    result is the final one and carries the first's reason. True when Ctrl-C stopped it: the runs
    not started are cancelled, those running are given their grace to save (their results, marked
    interrupted, are still passed on)."""
    pending: dict[int, tuple[Future, RunTask]] = {}
    for fut, task in zip(engine.submit(tasks), tasks, strict=True):
        pending[id(fut)] = (fut, task)
    try:
        while pending:
            finished = [k for k, (f, _) in pending.items() if f.done()]
            if not finished:
                time.sleep(POLL_S)
                continue
            for k in finished:
                fut, task = pending[k]
                result = _result(fut, task)
                if result.died and task.attempt == 1:
                    if on_retry is not None:
                        on_retry(result)
                    again = dataclasses.replace(task, attempt=2, retried_because=result.error or "it died")
                    (new,) = engine.submit([again])
                    pending.pop(k)
                    pending[id(new)] = (new, again)
                    continue
                # taken off only once passed on: a Ctrl-C inside on_result passes it on again
                # (``_interrupted``), so on_result keeps one record per key
                on_result(result)
                pending.pop(k)
    except KeyboardInterrupt:
        _interrupted(pending, on_result)
        return True
    return False


def _result(fut: Future, task: RunTask) -> TaskResult:
    """The result of ``task``: its run folder unpacked where it came back as bytes (no shared
    filesystem), and the attempt it was, also when the engine made it up (a lost worker)."""
    result = fut.result()
    if result.packed is not None:
        unpack(result, Path(task.run_dir))
    result.attempt, result.retried_because = task.attempt, task.retried_because
    return result


def _interrupted(pending: dict[int, tuple[Future, RunTask]], on_result: Callable[[TaskResult], None]) -> None:
    """Ctrl-C: cancel every run; a run already running had the Ctrl-C too (local) and saves what
    it compiled: its result, if it comes within the grace, is kept (interrupted, as ``run_task``
    says of it; a run that had finished before is passed on as it finished)."""
    from dynaprof.executors.run_task import INTERRUPT_GRACE_S

    for fut, _ in pending.values():
        fut.cancel()
    deadline = time.monotonic() + INTERRUPT_GRACE_S
    while pending and time.monotonic() < deadline:
        for k in [k for k, (f, _) in pending.items() if f.done()]:
            fut, task = pending.pop(k)
            result = _result(fut, task)
            if result.exit_status is not None:  # interrupted as its run says (a run done before stays done)
                on_result(result)
        try:
            time.sleep(POLL_S)
        except KeyboardInterrupt:
            break
