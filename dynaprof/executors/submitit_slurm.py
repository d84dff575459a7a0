"""``--executor slurm``: the runs as one Slurm job array through submitit, one run per task.

submitit writes each task's pickled call and output under ``EngineOptions.slurm_folder``, which
must be on the filesystem the nodes share (so are the run folders: each task writes its own). A
task Slurm preempts (or times out) is requeued by submitit's checkpointing (:class:`SlurmRun` is
``Checkpointable``: the run starts again from the beginning, a compile cannot be resumed). A task
that dies (its node lost, the job cancelled, the run killed) comes back as a result without an
exit status and its reason (submitit's error), and ``executors.run_all`` submits it once more.
``slurm_cluster="local"`` runs the same calls on submitit's local executor (no Slurm), to try a
suite file before sending it to a cluster.

submitit learns that a task ended without a result from ``sacct``. On a cluster without
accounting (no slurmdbd: ``sacct`` fails, submitit says "Bypassing sacct error") it would wait
for ever on a task whose worker was killed; there, and only there, the task's state is read from
Slurm's own ``squeue --states=all`` instead (:class:`_SqueueStates`, one call per poll interval).
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dynaprof.errors import DynaprofError
from dynaprof.executors.engine_options import EngineOptions
from dynaprof.executors.run_task import RunTask, TaskResult, run_task

try:
    import submitit
    from submitit.helpers import Checkpointable, DelayedSubmission
except ImportError:  # the extra is optional: make_engine says what to install
    submitit = None  # type: ignore[assignment]
    Checkpointable = object  # type: ignore[misc,assignment]
    DelayedSubmission = None  # type: ignore[misc,assignment]


class SlurmRun(Checkpointable):  # type: ignore[misc,valid-type]
    """The call each array task makes: one run. Preempted or timed out, submitit asks it for a
    checkpoint: the same call again, requeued."""

    def __call__(self, task: RunTask) -> TaskResult:
        return run_task(task)

    def checkpoint(self, task: RunTask) -> Any:
        return DelayedSubmission(self, task)


#: Slurm job states that end a task; a task in one of them with no result file was lost
ENDED_STATES = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                          "PREEMPTED", "REVOKED", "TIMEOUT"})
#: how long a task Slurm says ended may go without its result file before it counts as lost (the
#: file is written before the task ends, but a shared filesystem may show it late)
LOST_GRACE_S = 10.0
#: at most one ``squeue`` call per this many seconds
SQUEUE_EVERY_S = 2.0


def array_task_ids(listed: str) -> list[str]:
    """The task ids one line of ``squeue -o %i`` stands for: ``12_3``, or the array's tasks not
    started yet as one line, ``12_[4-6,9%2]`` (``%2``: at most 2 at a time)."""
    array, sep, indices = listed.partition("_[")
    if not sep:
        return [listed]
    out: list[str] = []
    for part in indices.rstrip("]").split("%")[0].split(","):
        first, _, last = part.partition("-")
        if first.isdigit() and (not last or last.isdigit()):
            out.extend(f"{array}_{i}" for i in range(int(first), int(last or first) + 1))
    return out


class _SqueueStates:
    """The states Slurm itself gives the tasks of our arrays (``squeue --states=all``, which keeps a
    finished job for ``MinJobAge``): read only where submitit has no ``sacct`` to ask."""

    def __init__(self) -> None:
        self._states: dict[str, str] | None = None
        self._at = float("-inf")
        self.arrays: set[str] = set()

    def state(self, job_id: str) -> str | None:
        """The task's state; ``GONE`` when Slurm no longer lists it; None when squeue cannot say."""
        if not self.arrays:
            return None
        if time.monotonic() - self._at >= SQUEUE_EVERY_S:
            self._at = time.monotonic()
            cmd = ["squeue", "-h", "--states=all", "-o", "%i %T", "-j", ",".join(sorted(self.arrays))]
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
            except (OSError, subprocess.SubprocessError):
                self._states = None
                return None
            self._states = {}
            for line in out.splitlines():
                if len(line.split()) == 2:
                    ids, state = line.split()
                    self._states.update(dict.fromkeys(array_task_ids(ids), state))
        if self._states is None:
            return None
        return self._states.get(job_id, "GONE")


class _OnceAboutSacct(logging.Filter):
    """Lets submitit's "Bypassing sacct error" warning through once: without accounting it comes on
    every poll, thousands of lines over a long suite."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if "Bypassing sacct error" not in record.getMessage():
            return True
        first, self.seen = not self.seen, True
        return first


class _SlurmFuture:
    def __init__(self, job: Any, key: str, squeue: _SqueueStates) -> None:
        self._job, self._key, self._squeue = job, key, squeue
        self._ended_at: float | None = None
        self._lost: str | None = None

    def done(self) -> bool:
        if self._lost is not None or self._job.done():
            return True
        if not self._squeue.arrays:  # submitit's local executor (--slurm-cluster local): its job knows
            return False
        if self._job.watcher.get_state(self._job.job_id, mode="cache") != "UNKNOWN":
            return False  # sacct answers: submitit knows when the task ends
        state = self._squeue.state(self._job.job_id)
        if state is None or (state != "GONE" and state not in ENDED_STATES):
            self._ended_at = None
            return False
        now = time.monotonic()
        if self._ended_at is None:
            self._ended_at = now
        if now - self._ended_at < LOST_GRACE_S or self._job.paths.result_pickle.exists():
            return bool(self._job.paths.result_pickle.exists())
        self._lost = (f"Slurm job {self._job.job_id} ended ({state}) without a result: its worker was lost "
                      f"(submitit's log: {self._job.paths.stderr})")
        return True

    def result(self) -> TaskResult:
        if self._lost is not None:
            return TaskResult(self._key, None, error=self._lost)
        try:
            out = self._job.result()
        except Exception as e:  # FailedJobError, UncompletedJobError: the task died; say why
            why = " ".join(str(e).split())
            return TaskResult(self._key, None, error=f"Slurm job {self._job.job_id} died: {why[:300]}")
        if not isinstance(out, TaskResult):
            return TaskResult(self._key, None, error=f"Slurm job {self._job.job_id} returned {type(out).__name__}")
        return out

    def cancel(self) -> None:
        try:
            self._job.cancel(check=False)
        except Exception:  # already finished or gone: nothing to cancel
            pass


class SlurmEngine:
    name = "slurm"

    def __init__(self, options: EngineOptions) -> None:
        if submitit is None:
            from dynaprof.executors.engine_options import missing_extra

            raise missing_extra("slurm", "submitit")
        if not options.slurm_folder:
            raise DynaprofError("--executor slurm needs a folder on the shared filesystem for submitit's files")
        folder = Path(options.slurm_folder) / "%j"
        try:
            self._ex = submitit.AutoExecutor(folder=folder, cluster=options.slurm_cluster)
        except Exception as e:  # no sbatch here, a bad cluster name
            raise DynaprofError(f"--executor slurm: submitit cannot start its {options.slurm_cluster} executor: "
                                f"{e}") from None
        params: dict[str, Any] = {"timeout_min": options.timeout_min, "cpus_per_task": options.cpus_per_task,
                                  "tasks_per_node": 1, "name": "dynaprof"}
        if options.slurm_cluster == "slurm":
            params["slurm_array_parallelism"] = options.workers
            if options.slurm_partition:
                params["slurm_partition"] = options.slurm_partition
            if options.gpus_per_task:
                params["slurm_gpus_per_task"] = int(options.gpus_per_task)
        elif options.gpus_per_task:
            params["gpus_per_node"] = int(options.gpus_per_task)
        self._ex.update_parameters(**params)
        self.cluster = str(self._ex.cluster)
        self.notes: list[str] = [f"runs made as a job array through submitit ({self.cluster} cluster), "
                                 f"at most {options.workers} at a time"]
        self._squeue = _SqueueStates()
        self._sacct_filter = _OnceAboutSacct()
        logging.getLogger("submitit").addFilter(self._sacct_filter)

    def submit(self, tasks: Sequence[RunTask]) -> list[_SlurmFuture]:
        if not tasks:
            return []
        call = SlurmRun()  # type: ignore[no-untyped-call]
        jobs = self._ex.map_array(call, list(tasks))
        if self.cluster == "slurm":
            self._squeue.arrays.update(str(j.job_id).split("_")[0] for j in jobs)
        return [_SlurmFuture(j, t.key, self._squeue) for j, t in zip(jobs, tasks, strict=True)]

    def close(self) -> None:
        logging.getLogger("submitit").removeFilter(self._sacct_filter)
