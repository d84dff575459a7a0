"""A real one-node Slurm for the executors' tests: munged, slurmctld and slurmd from Debian's
``slurm-wlm`` and ``munge``, started as root with a private key, socket, ports and state folder
(nothing in /etc is touched, and a Slurm or munge already running here is left alone), and
stopped by their PIDs. ``SLURM_CONF`` points the clients (``sbatch``, ``squeue``, submitit) at it.

What it takes, measured in ../shared/notes/cluster-engines.md: no cgroup.conf (22.05's slurmd
refuses ``CgroupPlugin=disabled``), ``proctrack/linuxproc``, ``task/none``; no accounting, so
submitit warns "Bypassing sacct error" on each poll. :func:`start` returns why it cannot run
instead (not root, packages missing and not installable, a daemon that does not come up).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MUNGED = "/usr/sbin/munged"
SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
PACKAGES = ("slurm-wlm", "munge")
#: how long the daemons may take to show the node idle
START_TIMEOUT_S = 60.0


@dataclass
class SlurmCluster:
    root: Path  # the daemons' files (short: the munge socket's path must fit a sockaddr)
    conf: Path
    host: str
    partition: str = "debug"

    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (``scontrol``, ``squeue``...) against this cluster."""
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=60, check=check,
                              env={**os.environ, **self.env()})

    def log(self, name: str) -> str:
        path = self.root / "log" / f"{name}.log"
        return path.read_text(errors="replace") if path.is_file() else ""


def _installed() -> bool:
    return all(os.access(p, os.X_OK) for p in (MUNGED, SLURMCTLD, SLURMD)) and shutil.which("sbatch") is not None


def _install() -> str | None:
    """apt-get install the packages where they are missing; why not, or None."""
    if _installed():
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"Slurm is not installed, and installing it needs root and apt-get: apt-get install {' '.join(PACKAGES)}"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env, timeout=120)
    done = subprocess.run(["apt-get", "install", "-y", "-qq", *PACKAGES], capture_output=True, text=True, env=env,
                          timeout=300)
    if done.returncode != 0 or not _installed():
        return f"apt-get install {' '.join(PACKAGES)} failed: {done.stderr.strip()[-300:]}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _memory_mib() -> int:
    with open("/proc/meminfo") as fh:
        total_kib = int(next(line for line in fh if line.startswith("MemTotal:")).split()[1])
    return max(1024, total_kib // 1024 - 1024)


def _conf(root: Path, host: str) -> str:
    r = str(root)
    return "\n".join([
        "ClusterName=dynaprof-test",
        f"SlurmctldHost={host}",
        f"SlurmctldPort={_free_port()}",
        f"SlurmdPort={_free_port()}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={r}/run/munge.socket",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "ReturnToService=2",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SchedulerParameters=sched_interval=1",
        "MinJobAge=300",
        "KillWait=5",
        f"StateSaveLocation={r}/state",
        f"SlurmdSpoolDir={r}/spool",
        f"SlurmctldPidFile={r}/run/slurmctld.pid",
        f"SlurmdPidFile={r}/run/slurmd.pid",
        f"SlurmctldLogFile={r}/log/slurmctld.log",
        f"SlurmdLogFile={r}/log/slurmd.log",
        f"NodeName={host} CPUs={os.cpu_count() or 1} RealMemory={_memory_mib()} State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def _start_munge(root: Path) -> str | None:
    """A munged of our own, as the munge user (it refuses root): its key folder private, its socket's
    folder open to all (munged checks both)."""
    key_dir, run = root / "munge", root / "run"
    key_dir.mkdir()
    run.mkdir()
    (key_dir / "munge.key").write_bytes(os.urandom(1024))
    for path, mode in ((key_dir / "munge.key", 0o400), (key_dir, 0o700), (run, 0o755)):
        shutil.chown(path, "munge", "munge")
        os.chmod(path, mode)
    done = subprocess.run(["runuser", "-u", "munge", "--", MUNGED, f"--socket={run}/munge.socket",
                           f"--key-file={key_dir}/munge.key", f"--pid-file={run}/munged.pid",
                           f"--log-file={key_dir}/munged.log", f"--seed-file={key_dir}/munged.seed"],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return f"munged did not start: {done.stderr.strip()[-300:]}"
    cred = subprocess.run(["munge", "-n", "-S", f"{run}/munge.socket"], capture_output=True, text=True, timeout=30)
    check = subprocess.run(["unmunge", "-S", f"{run}/munge.socket"], input=cred.stdout, capture_output=True,
                           text=True, timeout=30)
    return None if "Success" in check.stdout else f"munge -n | unmunge failed: {check.stdout}{check.stderr}"


def _wait_idle(cluster: SlurmCluster) -> str | None:
    deadline = time.monotonic() + START_TIMEOUT_S
    state = ""
    while time.monotonic() < deadline:
        done = cluster.run("sinfo", "-h", "-o", "%T", check=False)
        state = done.stdout.strip()
        if state == "idle":
            return None
        time.sleep(0.5)
    return f"the node is not idle after {START_TIMEOUT_S:g} s (sinfo: {state!r}); slurmd log: " + \
        cluster.log("slurmd")[-300:]


def _pid(root: Path, name: str) -> int | None:
    try:
        return int((root / "run" / f"{name}.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _stop(root: Path) -> None:
    """Stop our daemons by the PIDs they wrote: the Slurm ones together, then munged; each waited for,
    killed if it takes over 15 s."""
    for names in (("slurmd", "slurmctld"), ("munged",)):
        pids = [p for p in (_pid(root, n) for n in names) if p is not None]
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if Path(f"/proc/{p}").exists()]
            time.sleep(0.1)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def start() -> Iterator[SlurmCluster | str]:
    """A running one-node cluster, stopped on exit; or a string saying why there is none."""
    why = None if os.geteuid() == 0 else "the Slurm daemons need root"
    why = why or _install()
    if why:
        yield why
        return
    root = Path(tempfile.mkdtemp(prefix="dp-slurm-", dir="/tmp"))
    os.chmod(root, 0o755)
    host = socket.gethostname().split(".")[0]
    try:
        for sub in ("state", "spool", "log"):
            (root / sub).mkdir()
        why = _start_munge(root)
        cluster = SlurmCluster(root, root / "slurm.conf", host)
        if why is None:
            cluster.conf.write_text(_conf(root, host))
            for daemon in (SLURMCTLD, SLURMD):
                done = subprocess.run([daemon, "-f", str(cluster.conf)], capture_output=True, text=True, timeout=60)
                if done.returncode != 0:
                    why = f"{daemon} did not start: {done.stderr.strip()[-300:]}"
                    break
        why = why or _wait_idle(cluster)
        yield why if why else cluster
    finally:
        _stop(root)
        if not os.environ.get("DYNAPROF_KEEP_SLURM"):  # set: keep the daemons' logs to read
            shutil.rmtree(root, ignore_errors=True)
