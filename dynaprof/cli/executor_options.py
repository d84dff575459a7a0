"""``--executor`` and its engines' options: declared once, for every command that farms runs out
(``suite``, ``sweep``, ``run --repeat``), and read into :class:`~dynaprof.executors.EngineOptions`;
and the options each farmed-out run of ``suite`` and ``sweep`` takes."""

from __future__ import annotations

import argparse
from pathlib import Path

from dynaprof.executors import EXECUTORS, EngineOptions


def add_executor_options(p: argparse.ArgumentParser, default: str | None = "local") -> None:
    """``--executor`` and its engines' options (``suite``, ``sweep``, ``run --repeat``: the same
    words wherever runs are farmed out). ``default`` None: runs stay in this process unless asked."""
    g = p.add_argument_group("where the runs run (dynaprof.executors; docs/suite.md)")
    g.add_argument("--executor", choices=EXECUTORS, default=default,
                   help="local: worker processes on this machine" + (" (default)" if default == "local" else "")
                        + "; slurm: a job array through submitit (pip install 'dynaprof[slurm]'); ray: Ray tasks "
                        "(pip install 'dynaprof[ray]')" + ("" if default else "; default: the repeats run one "
                                                            "after another in this process"))
    g.add_argument("--workers", type=int, default=1, metavar="N",
                   help="runs at a time (default 1: parallel runs on one machine slow each other's compiles)")
    g.add_argument("--gpus-per-task", type=float, default=0, metavar="N", help="GPUs each run gets (slurm, ray)")
    g.add_argument("--cpus-per-task", type=int, default=1, metavar="N", help="CPUs each run gets (slurm, ray)")
    g.add_argument("--slurm-partition", metavar="NAME", help="the Slurm partition (default: the cluster's)")
    g.add_argument("--slurm-timeout", type=int, default=60, metavar="MIN", help="each task's time limit (default 60)")
    g.add_argument("--slurm-cluster", choices=("slurm", "local"), default="slurm",
                   help="local: submitit's own local executor, to try a suite without a cluster")
    g.add_argument("--ray-address", metavar="ADDR",
                   help="join this Ray cluster (auto: the one this machine is in); default: start one here")
    g.add_argument("--shared-fs", action="store_true",
                   help="ray: the workers see DIR, so run folders need not come back through the object store")


#: the options above (argparse dests), for commands that say which go together
EXECUTOR_DESTS = ("executor", "workers", "gpus_per_task", "cpus_per_task", "slurm_partition", "slurm_timeout",
                  "slurm_cluster", "ray_address", "shared_fs")


#: each count among the executor options and the least it may be (--slurm-timeout: in minutes)
_LEAST = {"workers": 1, "cpus_per_task": 1, "gpus_per_task": 0, "slurm_timeout": 1}


def check_executor_options(args: argparse.Namespace) -> None:
    """DynaprofError naming the bad value, before any folder is made."""
    from dynaprof.errors import DynaprofError

    for name, least in _LEAST.items():
        if (value := getattr(args, name)) < least:
            raise DynaprofError(f"--{name.replace('_', '-')} must be at least {least}, got {value:g}")


def engine_options(args: argparse.Namespace, out: Path) -> EngineOptions:
    return EngineOptions(args.executor or "local", args.workers, args.gpus_per_task, args.cpus_per_task,
                         str(out / ".submitit"), args.slurm_partition, args.slurm_timeout, args.slurm_cluster,
                         args.ray_address, args.shared_fs)


def add_each_run_options(p: argparse.ArgumentParser) -> None:
    """The ``dynaprof run`` options each farmed-out run of ``suite`` and ``sweep`` takes."""
    p.add_argument("--sampler", choices=("builtin", "none"), default="builtin",
                   help="each run's stack sampler (the causes and phases need it; default builtin)")
    p.add_argument("--rate", type=float, metavar="HZ", help="each run's sampling rate (default: run's)")


def each_run_options(args: argparse.Namespace) -> list[str]:
    """``add_each_run_options``' values as ``dynaprof run`` words."""
    return ["--sampler", args.sampler] + (["--rate", f"{args.rate:g}"] if args.rate is not None else [])
