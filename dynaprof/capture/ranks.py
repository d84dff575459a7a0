"""Multi-rank jobs (torchrun) seen from capture: who this process is, where its run folder goes, how to launch.

``torchrun --nproc-per-node N -m dynaprof run -o DIR script.py`` starts one ``dynaprof run`` per
rank; each one finds its rank here (torchrun's ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``TORCHELASTIC_RUN_ID`` variables) and writes ``DIR/rank-<RANK>/``. Without ``-o`` every rank
must still agree on DIR without talking to the others: it is derived from facts all ranks share
(the rendezvous id, else the launching agent's pid and start time). ``dynaprof run
--nproc-per-node N`` builds the torchrun command line with ``torchrun_command``.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: set by ``dynaprof run --nproc-per-node`` for its ranks: the launcher prints the merged view,
#: so the ranks neither wait for each other nor print it (and a world of 1 still gets rank-0/)
LAUNCHER_ENV = "DYNAPROF_RANKS_LAUNCHER"
#: torchrun worker-count words it accepts besides a number
NPROC_WORDS = ("auto", "cpu", "gpu", "xpu")

_RANK_DIR = re.compile(r"^rank-(\d+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class RankEnv:
    """This process's place in a torchrun job."""

    rank: int
    world_size: int
    local_rank: int | None = None
    run_id: str | None = None  # TORCHELASTIC_RUN_ID ("none" when torchrun was given no --rdzv-id)
    restart_count: int = 0  # TORCHELASTIC_RESTART_COUNT: >0 after torchrun restarted the workers
    launcher: bool = False  # started by `dynaprof run --nproc-per-node`


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def rank_env(environ: Mapping[str, str] | None = None) -> RankEnv | None:
    """The rank of this process, or None outside a multi-rank job (no RANK, or WORLD_SIZE <= 1
    when not started by dynaprof's own launcher)."""
    env = os.environ if environ is None else environ
    rank, world = _int(env.get("RANK")), _int(env.get("WORLD_SIZE"))
    launcher = bool(env.get(LAUNCHER_ENV))
    if rank is None or rank < 0 or world is None or world < 1 or rank >= world:
        return None
    if world == 1 and not launcher:
        return None
    run_id = env.get("TORCHELASTIC_RUN_ID") or None
    return RankEnv(
        rank, world, _int(env.get("LOCAL_RANK")), run_id, _int(env.get("TORCHELASTIC_RESTART_COUNT")) or 0, launcher
    )


def inside_torchrun(environ: Mapping[str, str] | None = None) -> bool:
    """True in any process torchrun started (also a world of one)."""
    env = os.environ if environ is None else environ
    return "RANK" in env or "TORCHELASTIC_RUN_ID" in env


def parse_rank_dir(name: str) -> int | None:
    """``rank-3`` -> 3; anything else -> None."""
    m = _RANK_DIR.match(name)
    return int(m.group(1)) if m else None


def rank_dirs(path: Path) -> dict[int, Path]:
    """The ``rank-N`` folders directly inside ``path``, by rank."""
    out: dict[int, Path] = {}
    try:
        children = list(Path(path).iterdir())
    except OSError:
        return out
    for child in children:
        r = parse_rank_dir(child.name)
        if r is not None and child.is_dir():
            out[r] = child
    return dict(sorted(out.items()))


def _process_start(pid: int) -> datetime.datetime | None:
    """When process ``pid`` started (Linux /proc), to the second; None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        btime = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
        )
        return datetime.datetime.fromtimestamp(btime + ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def shared_run_name(stem: str, env: RankEnv, parent_pid: int | None = None) -> str:
    """``<stem>-<id>``, the same on every rank of the job: the rendezvous id when torchrun has a
    real one (``--standalone`` or ``--rdzv-id``), else the start time and pid of the agent that
    launched the ranks (the same for every rank of a node). After a torchrun restart:
    ``-restart<N>``, so the new attempt does not collide with the old one."""
    run_id = env.run_id if env.run_id and env.run_id.lower() != "none" else None
    if run_id is not None:
        tag = run_id[:8] if _UUID.match(run_id) else _UNSAFE.sub("_", run_id).strip("._")[:40]
    else:
        ppid = os.getppid() if parent_pid is None else parent_pid
        started = _process_start(ppid)
        tag = (f"{started:%Y%m%d-%H%M%S}-" if started else "") + f"p{ppid}"
    name = f"{stem}-{tag or 'job'}"
    return name + (f"-restart{env.restart_count}" if env.restart_count > 0 else "")


def check_nproc(value: str) -> str:
    """torchrun's ``--nproc-per-node``: a positive number or auto/cpu/gpu/xpu; ValueError else."""
    v = value.strip().lower()
    if v in NPROC_WORDS:
        return v
    if v.isdigit() and int(v) > 0:
        return str(int(v))
    raise ValueError(f"--nproc-per-node must be a positive number or one of {', '.join(NPROC_WORDS)}, got {value!r}")


def torchrun_command(
    nproc: str, out_dir: Path, run_options: list[str], target: list[str], python: str | None = None
) -> list[str]:
    """``python -m torch.distributed.run --standalone --nproc-per-node N -m dynaprof run -o DIR
    <options> <target>``. ``--standalone``: a rendezvous on a free local port (no clash with
    other jobs on the machine) and a unique run id; ``target`` is ``[script, args...]`` or
    ``["-m", module, args...]``."""
    return [
        python or sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        nproc,
        "-m",
        "dynaprof",
        "run",
        "-o",
        str(out_dir),
        *run_options,
        *target,
    ]


def torchrun_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The launcher's environment for torchrun: marks the ranks as launched by dynaprof and,
    when dynaprof runs from a checkout rather than an installed package, makes ``-m dynaprof``
    importable in the ranks (appended to PYTHONPATH, so it shadows none of the script's imports)."""
    env = dict(os.environ if environ is None else environ)
    env[LAUNCHER_ENV] = "1"
    spec = importlib.util.find_spec("dynaprof")
    installed = spec is not None and spec.origin is not None and "-packages" in spec.origin
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if not installed and _PACKAGE_PARENT not in paths:
        env["PYTHONPATH"] = os.pathsep.join([*paths, _PACKAGE_PARENT])
    return env
