"""``--executor local``: N runs at a time on this machine. Each run is its own process (``dynaprof
run``); a thread per worker only waits for it, so a pool of threads is all the engine there is.
Parallel runs share the machine's cores, caches and memory bandwidth: they slow each other's
compiles (the exact counts are unaffected), which the notes say whenever N > 1."""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Sequence

from dynaprof.executors.run_task import RunTask, TaskResult, run_task


class _LocalFuture:
    def __init__(self, fut: cf.Future[TaskResult], key: str) -> None:
        self._fut, self._key = fut, key

    def done(self) -> bool:
        return self._fut.done()

    def result(self) -> TaskResult:
        if self._fut.cancelled():
            return TaskResult(self._key, None, error="cancelled before it started", interrupted=True)
        try:
            return self._fut.result()
        except Exception as e:  # the run could not start at all (no such folder...): its reason
            return TaskResult(self._key, 1, error=f"could not start: {type(e).__name__}: {e}")

    def cancel(self) -> None:
        self._fut.cancel()


class LocalPool:
    name = "local"

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dynaprof-worker")
        self.notes: list[str] = []
        if workers > 1:
            self.notes.append(f"{workers} runs at a time on one machine: parallel runs slow each other's "
                              "compiles, so compare times only with runs made with the same --workers "
                              "(the exact counts are unaffected)")

    def submit(self, tasks: Sequence[RunTask]) -> list[_LocalFuture]:
        return [_LocalFuture(self._pool.submit(run_task, t), t.key) for t in tasks]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
