"""What ``--executor`` and its options ask of an engine, and the error an engine's missing extra
gives (kept apart from ``executors/__init__`` so that the engines import it without a cycle)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dynaprof.errors import DynaprofError


@dataclass
class EngineOptions:
    """What ``--executor`` and its options ask for (each engine reads its own)."""

    kind: str = "local"
    workers: int = 1
    #: GPUs each run gets (Slurm ``--gpus-per-task``, Ray ``num_gpus``); 0: none asked
    gpus_per_task: float = 0
    cpus_per_task: int = 1
    #: the folder submitit keeps its job files in (on the filesystem the nodes share)
    slurm_folder: str = ""
    slurm_partition: str | None = None
    timeout_min: int = 60
    #: submitit's cluster: ``slurm``, or ``local`` (submitit's own local executor, no Slurm)
    slurm_cluster: str = "slurm"
    #: ``ray.init(address=...)``; None: a cluster started here (``auto`` joins a running one)
    ray_address: str | None = None
    #: the Ray workers see the output folder: no need to send run folders back as bytes
    shared_fs: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)


def missing_extra(engine: str, module: str) -> DynaprofError:
    return DynaprofError(f"--executor {engine} needs the {module} package: pip install 'dynaprof[{engine}]'")
