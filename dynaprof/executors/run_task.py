"""One run of a script as a fresh ``dynaprof run`` process: what an executor ships to a worker
(:class:`RunTask`) and what comes back (:class:`TaskResult`). :func:`run_task` runs on the worker,
whatever the engine (a local thread, a Slurm task, a Ray task): it makes the cold compiler caches
there (:func:`cold_caches`, the ones ``run --repeat`` uses), starts ``python -m dynaprof run`` and
waits. The run goes through the one pipeline like any ``dynaprof run``; nothing here reads a
journal or writes a run folder. The standard library and ``dynaprof.fmt`` only, the rarely used
parts imported where used: a worker imports it before anything else, and so does every command.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dynaprof import fmt

#: the compiler cache locations a cold run points at a fresh folder each; TMPDIR too, since
#: Inductor keeps its C++ precompiled header in the temp dir whatever its cache dir is
CACHE_ENV = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TMPDIR")
#: how long an interrupted run may take to save what it compiled
INTERRUPT_GRACE_S = 60.0
#: the log of a run sits beside its folder: ``NAME/1`` -> ``NAME/1.log``
LOG_SUFFIX = ".log"


@contextlib.contextmanager
def cold_caches(cold: bool = True) -> Iterator[dict[str, str]]:
    """A fresh, empty folder for each compiler cache (``CACHE_ENV`` name -> folder), removed on
    exit; none where not ``cold`` (the user's caches)."""
    folders: dict[str, str] = {}
    if cold:
        folders = {name: tempfile.mkdtemp(prefix=f"dynaprof-{name.split('_')[0].lower()}-") for name in CACHE_ENV}
    try:
        yield folders
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class RunTask:
    """One ``dynaprof run``: ``dynaprof run -q --force -o RUN_DIR OPTIONS -- TARGET...``."""

    key: str  # ``NAME/K``: the run's place under the output folder, and its id in the results
    run_dir: str  # absolute; on a worker without the shared filesystem a temporary folder stands in
    target: list[str]  # the script and its arguments
    options: list[str] = field(default_factory=list)  # ``dynaprof run`` options (--sampler ...)
    env: dict[str, str] = field(default_factory=dict)  # set in the run's environment
    cwd: str | None = None
    cold: bool = True
    #: no shared filesystem: run in a temporary folder and send the run folder back as bytes
    pack: bool = False
    attempt: int = 1
    #: why the attempt before this one did not count (it died); None on a first attempt
    retried_because: str | None = None

    @property
    def log(self) -> str:
        return self.run_dir + LOG_SUFFIX


@dataclass
class TaskResult:
    key: str
    exit_status: int | None  # None: the engine lost the task (the worker or node died)
    wall_s: float | None = None
    #: why the run has no result, or what went wrong in it; None when it exited 0
    error: str | None = None
    interrupted: bool = False
    attempt: int = 1
    retried_because: str | None = None
    host: str | None = None
    #: the run folder and its log as a gzipped tar (``pack``): unpacked by the driver
    packed: bytes | None = None
    #: the ``dynaprof run`` process or its script was killed by a signal other than SIGINT (the OOM
    #: killer, a segfault, ``kill -9``): the run died, it did not exit
    killed: bool = False

    @property
    def died(self) -> bool:
        """The process, its script or its worker was killed (not Ctrl-C, not an exit of the script):
        retried once."""
        if self.interrupted:
            return False
        return self.exit_status is None or self.killed


def last_error(log: Path) -> str:
    """The last non-empty line the run printed (a traceback's exception line), cut short."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return fmt.one_line(next((ln for ln in reversed(lines) if ln.strip()), ""), 300)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def script_signal(status: int | None, run_dir: Path) -> int | None:
    """The signal that killed the run's script, when ``dynaprof run`` says so: it exits 128 + N as a
    shell would, and its session's ``end_reason`` is ``signal`` (a script's own ``sys.exit(137)``
    is an exit)."""
    if status is None or status <= 128:
        return None
    try:
        run = json.loads((run_dir / "session.json").read_text(encoding="utf-8")).get("run") or {}
    except (OSError, ValueError, AttributeError):
        return None
    return status - 128 if isinstance(run, dict) and run.get("end_reason") == "signal" else None


def status_error(status: int | None, log: Path, interrupted: bool, script_sig: int | None = None) -> str | None:
    """Why a run with this exit status gives no result; None for 0."""
    if status == 0:
        return None
    if interrupted:
        return f"exit status {status}: interrupted (Ctrl-C)"
    if status is not None and status < 0:
        return f"dynaprof run was killed by {_signal_name(-status)}"
    if script_sig is not None:
        return f"exit status {status}: the script was killed by {_signal_name(script_sig)}"
    why = last_error(log)
    return f"exit status {status}" + (f": {why}" if why else "")


def child_env(task: RunTask, caches: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(task.env)
    env.update(caches)
    # the run's dynaprof is this one, wherever it was imported from (after the user's own path)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), here) if p)
    return env


def run_task(task: RunTask) -> TaskResult:
    """Run ``task`` here (on the worker) and wait for it."""
    if not task.pack:
        return _run(task, Path(task.run_dir))
    import io
    import tarfile

    with tempfile.TemporaryDirectory(prefix="dynaprof-run-") as tmp:
        where = Path(tmp) / "run"
        result = _run(task, where)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            if where.is_dir():
                tar.add(where, arcname="run")
            log = Path(str(where) + LOG_SUFFIX)
            if log.is_file():
                tar.add(log, arcname="run" + LOG_SUFFIX)
        result.packed = buf.getvalue()
        return result


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel send SIGTERM to the run when the worker thread that
    started it dies (a Ray worker or a Slurm task killed): ``dynaprof run`` passes it to the script,
    saves and exits, instead of running on unwatched while the run is retried. Linux only; libc is
    loaded before the fork, so the child only makes the call."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here: every command imports this module, few start a run

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)

    def preexec() -> None:
        prctl(pr_set_pdeathsig, sigterm, 0, 0, 0)

    return preexec


def _run(task: RunTask, run_dir: Path) -> TaskResult:
    log = Path(str(run_dir) + LOG_SUFFIX)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    # a module (``-m NAME ARGS``, as ``dynaprof run -m`` takes it) or a script after ``--``
    where = task.target if task.target[:1] == ["-m"] else ["--", *task.target]
    cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(run_dir), *task.options, *where]
    interrupted = False
    start = time.perf_counter()
    with cold_caches(task.cold) as caches, log.open("wb") as fh:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                 env=child_env(task, caches), cwd=task.cwd, preexec_fn=_die_with_parent())
        try:
            status = child.wait()
        except KeyboardInterrupt:  # the child had the same Ctrl-C: let it save what it compiled
            interrupted = True
            try:
                status = child.wait(INTERRUPT_GRACE_S)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                child.kill()
                status = child.wait()
        except BaseException:  # the engine ends this worker (submitit requeues a preempted task): the run too
            child.kill()
            child.wait()
            raise
    wall = round(time.perf_counter() - start, 6)
    interrupted = interrupted or status in (130, -signal.SIGINT)
    script_sig = None if interrupted else script_signal(status, run_dir)
    killed = not interrupted and (status < 0 or script_sig is not None)
    import socket

    return TaskResult(task.key, status, wall, status_error(status, log, interrupted, script_sig), interrupted,
                      task.attempt, task.retried_because, socket.gethostname(), killed=killed)


def unpack(result: TaskResult, run_dir: Path) -> None:
    """Put a packed run folder (and its log) at ``run_dir`` on the driver, replacing what was there."""
    if result.packed is None:
        return
    import io
    import tarfile

    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=run_dir.parent, prefix=".unpack-") as tmp, \
            tarfile.open(fileobj=io.BytesIO(result.packed), mode="r:gz") as tar:
        tar.extractall(tmp, filter="data")
        if (Path(tmp) / "run").is_dir():
            os.replace(Path(tmp) / "run", run_dir)
        if (Path(tmp) / ("run" + LOG_SUFFIX)).is_file():
            os.replace(Path(tmp) / ("run" + LOG_SUFFIX), str(run_dir) + LOG_SUFFIX)
    result.packed = None
