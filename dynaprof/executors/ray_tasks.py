"""``--executor ray``: each run a Ray task (``num_gpus``, ``max_retries``).

Ray assumes no shared filesystem: unless ``--shared-fs``, a task runs in a temporary folder on its
worker and its run folder comes back as bytes through the object store (``run_task`` packs it, the
driver unpacks it at ``NAME/K``). A task whose worker process dies comes back as a result without
an exit status and Ray's reason (``max_retries=0``: Ray's own retry would run it again silently,
without the reason, and on top of ``executors.run_all``'s one retry), and ``run_all`` submits it
once more. ``ray.init`` joins ``--ray-address``
(``auto``: the cluster this machine is part of) or starts a cluster of this machine's cores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dynaprof.executors.engine_options import EngineOptions
from dynaprof.executors.run_task import RunTask, TaskResult, run_task

try:
    import ray
except ImportError:  # the extra is optional: make_engine says what to install
    ray = None  # type: ignore[assignment]


def _run_remote(task: RunTask) -> TaskResult:
    return run_task(task)


class _RayFuture:
    def __init__(self, ref: Any, key: str) -> None:
        self._ref, self._key = ref, key

    def done(self) -> bool:
        ready, _ = ray.wait([self._ref], timeout=0)
        return bool(ready)

    def result(self) -> TaskResult:
        try:
            out = ray.get(self._ref)
        except Exception as e:  # WorkerCrashedError, NodeDiedError, TaskCancelledError...
            why = " ".join(str(e).split())
            return TaskResult(self._key, None, error=f"Ray task failed: {type(e).__name__}: {why[:300]}")
        if not isinstance(out, TaskResult):
            return TaskResult(self._key, None, error=f"Ray task returned {type(out).__name__}")
        return out

    def cancel(self) -> None:
        try:
            ray.cancel(self._ref, force=True)
        except Exception:  # already finished
            pass


class RayEngine:
    name = "ray"

    def __init__(self, options: EngineOptions) -> None:
        if ray is None:
            from dynaprof.executors.engine_options import missing_extra

            raise missing_extra("ray", "ray")
        self._started = not ray.is_initialized()
        if self._started:
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if options.ray_address:
                kwargs["address"] = options.ray_address
            else:
                kwargs["num_cpus"] = options.workers * options.cpus_per_task
            ray.init(**kwargs)
        self._pack = not options.shared_fs
        self._remote = ray.remote(num_cpus=options.cpus_per_task, num_gpus=options.gpus_per_task,
                                  max_retries=0)(_run_remote)
        cpus = ray.cluster_resources().get("CPU", 0)  # type: ignore[no-untyped-call]
        self.notes: list[str] = [f"runs made as Ray tasks on a cluster of {cpus:g} CPUs" + (
            ", their run folders sent back through the object store" if self._pack else "")]

    def submit(self, tasks: Sequence[RunTask]) -> list[_RayFuture]:
        import dataclasses

        out = []
        for t in tasks:
            task = dataclasses.replace(t, pack=self._pack)
            out.append(_RayFuture(self._remote.remote(task), t.key))
        return out

    def close(self) -> None:
        if self._started:
            ray.shutdown()
