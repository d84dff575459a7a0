"""The executors against the real engines, no mock: this machine's worker pool, a one-node Slurm
(munged, slurmctld and slurmd started here: ``tests/e2e/slurm_cluster.py``) through submitit's job
array, and a local Ray cluster (``ray.init``). Each test runs a tiny script through
``RunTask``/``run_all`` (a ``torch.compile(backend="eager")`` of a small function, a few seconds)
and reads the run folder and ``session.json`` that arrived. A run that dies (its ``dynaprof run``
killed, its script killed, its worker killed) is recorded with its reason and retried exactly
once; Slurm requeues a preempted task by itself (not a retry); an engine's missing extra names
``dynaprof[slurm]`` / ``dynaprof[ray]``. Each test takes under 20 s here (2 cores), so none is
``slow``; the engines' start and stop (Slurm ~1 s and ~7 s, Ray ~5 s and ~5 s) are paid once per
module. Without root or Slurm's packages (``scripts/setup.sh --test`` installs them) the Slurm tests
skip and say why.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynaprof.executors import EngineOptions, make_engine, run_all
from dynaprof.executors.run_task import LOG_SUFFIX, RunTask, TaskResult
from tests.e2e import slurm_cluster
from tests.helpers import restore_env

ROOT = Path(__file__).resolve().parents[2]

#: MODE MARKER [TAG]: each start appends "pid parent-pid" to MARKER, so its lines count the attempts
SCRIPT = textwrap.dedent('''
    import os, signal, sys, time

    mode, marker = sys.argv[1], sys.argv[2]
    with open(marker, "a") as fh:
        fh.write(f"{os.getpid()} {os.getppid()}\\n")
    with open(marker) as fh:
        first = len(fh.readlines()) == 1
    if mode == "kill-run" and first:  # `dynaprof run` itself killed (the OOM killer, kill -9)
        os.kill(os.getppid(), signal.SIGKILL)
        os._exit(0)
    if mode == "kill-script":  # the script killed, every time
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "kill-worker" and first:  # the worker that started `dynaprof run` (a Ray worker, a Slurm task)
        with open(f"/proc/{os.getppid()}/stat") as fh:
            worker = int(fh.read().rsplit(")", 1)[1].split()[1])
        os.kill(worker, signal.SIGKILL)
        time.sleep(120)  # ended by the SIGTERM `dynaprof run` gets when its worker dies
    if mode == "preempted" and first:
        time.sleep(120)  # preempted in the meantime
    if mode == "compile":
        import torch

        def f(x):
            return torch.sin(x) + x * 2

        print("result", sys.argv[3], float(torch.compile(f, backend="eager")(torch.ones(4)).sum()))
''')


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.py"
    path.write_text(SCRIPT)
    return path


def task(tmp_path: Path, script: Path, key: str, mode: str, tag: str = "") -> RunTask:
    marker = tmp_path / f"{key.replace('/', '-')}.starts"
    return RunTask(key, str(tmp_path / "out" / key), [str(script), mode, str(marker), *([tag] if tag else [])],
                   ["--sampler", "none", "--exports", "none"], {"DYNAPROF_TEST_TAG": tag}, str(tmp_path))


def starts(t: RunTask) -> list[tuple[int, int]]:
    """(pid, parent pid) of each start of the task's script."""
    path = Path(t.target[2])
    return [(int(a), int(b)) for a, b in (ln.split() for ln in path.read_text().splitlines())] if path.exists() else []


def session(t: RunTask) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(t.run_dir) / "session.json").read_text())
    return data


def check_compiled(t: RunTask, result: TaskResult) -> dict[str, Any]:
    """The run folder of a `compile` task is where it belongs, with this task's run in it."""
    assert (result.key, result.exit_status, result.error, result.attempt) == (t.key, 0, None, 1), result
    s = session(t)
    assert (s["run"]["exit_status"], s["run"]["end_reason"], s["run"]["complete"]) == (0, "exited", True)
    assert s["run"]["argv"] == t.target
    assert [(f["name"], f["status"], f["filename"]) for f in s["frames"]] == [("f", "ok", t.target[0])]
    # cold caches: a fresh Inductor cache folder per run
    assert Path(s["run"]["env"]["TORCHINDUCTOR_CACHE_DIR"]).name.startswith("dynaprof-torchinductor-")
    assert f"result {t.target[3]} 11.36" in Path(t.run_dir + LOG_SUFFIX).read_text()
    assert len(starts(t)) == 1
    return s


def check_retried(t: RunTask, result: TaskResult, reason: str, retried: list[TaskResult]) -> None:
    """Died once, retried once, and the second attempt is the result, carrying the first's reason."""
    assert [r.key for r in retried].count(t.key) == 1
    first = next(r for r in retried if r.key == t.key)
    assert first.attempt == 1 and first.died and reason in (first.error or ""), first
    assert (result.attempt, result.exit_status, result.error) == (2, 0, None), result
    assert reason in (result.retried_because or ""), result
    assert len(starts(t)) == 2
    s = session(t)
    assert (s["run"]["exit_status"], s["run"]["end_reason"], s["run"]["argv"]) == (0, "exited", t.target)


def run(engine: Any, tasks: list[RunTask]) -> tuple[dict[str, TaskResult], list[TaskResult], float]:
    results: dict[str, TaskResult] = {}
    retried: list[TaskResult] = []

    def on_result(r: TaskResult) -> None:
        assert r.key not in results, f"{r.key} came back twice"
        results[r.key] = r

    start = time.perf_counter()
    try:
        assert run_all(engine, tasks, on_result, retried.append) is False
    finally:
        engine.close()
    assert sorted(results) == sorted(t.key for t in tasks)
    return results, retried, time.perf_counter() - start


# ---------------------------------------------------------------- local


@pytest.mark.torch
def test_local_pool_two_workers(tmp_path: Path, script: Path) -> None:
    tasks = [task(tmp_path, script, "alpha/1", "compile", "alpha"), task(tmp_path, script, "beta/1", "compile", "beta")]
    engine = make_engine(EngineOptions("local", workers=2))
    assert any("parallel runs slow each other" in n for n in engine.notes)
    results, retried, _ = run(engine, tasks)
    assert retried == []
    pids = {check_compiled(t, results[t.key])["run"]["pid"] for t in tasks}
    assert len(pids) == 2  # two processes, each its own run
    caches = {session(t)["run"]["env"]["TORCHINDUCTOR_CACHE_DIR"] for t in tasks}
    assert len(caches) == 2 and not any(Path(c).exists() for c in caches)  # fresh per run, removed after


def test_local_died_is_retried_once(tmp_path: Path, script: Path) -> None:
    """`dynaprof run` killed by SIGKILL once: retried, the second attempt kept; a script killed by a
    signal every time: run exactly twice, then recorded with its reason."""
    once, always = task(tmp_path, script, "once/1", "kill-run"), task(tmp_path, script, "always/1", "kill-script")
    results, retried, _ = run(make_engine(EngineOptions("local", workers=2)), [once, always])
    check_retried(once, results[once.key], "dynaprof run was killed by SIGKILL", retried)
    last = results[always.key]
    assert len(starts(always)) == 2 and [r.key for r in retried].count(always.key) == 1
    assert (last.attempt, last.exit_status, last.died) == (2, 137, True), last
    assert last.error == "exit status 137: the script was killed by SIGKILL"
    assert last.retried_because == "exit status 137: the script was killed by SIGKILL"
    assert session(always)["run"]["end_reason"] == "signal"


def test_exit_status_is_not_a_death(tmp_path: Path) -> None:
    """A script that exits 137 itself failed; it did not die: no retry, its own last line as the reason."""
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nprint('bad input', file=sys.stderr)\nsys.exit(137)\n")
    t = RunTask("exits/1", str(tmp_path / "out" / "exits" / "1"), [str(exits)], ["--sampler", "none"],
                cwd=str(tmp_path))
    results, retried, _ = run(make_engine(EngineOptions("local")), [t])
    r = results[t.key]
    assert retried == [] and (r.exit_status, r.died, r.attempt) == (137, False, 1)
    assert r.error is not None and r.error.startswith("exit status 137") and "signal" not in r.error


CTRL_C_DRIVER = """
import json, sys
from dynaprof.executors import EngineOptions, make_engine, run_all
from dynaprof.executors.run_task import RunTask

tasks = [RunTask(**t) for t in json.loads(sys.argv[1])]
results = []
engine = make_engine(EngineOptions("local", workers=1))
stopped = run_all(engine, tasks, results.append)
engine.close()
print(json.dumps({"stopped": stopped, "results": [[r.key, r.exit_status, r.interrupted] for r in results]}))
"""


def test_local_ctrl_c_keeps_what_finished(tmp_path: Path, script: Path) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) on one worker, one run finished,
    one running and one waiting: the finished run is kept, the running one saves what it has and comes back marked
    interrupted, the waiting one is cancelled, and run_all says it was stopped."""
    done, running, waiting = (task(tmp_path, script, k, m) for k, m in
                              (("done/1", "quick"), ("running/1", "preempted"), ("waiting/1", "quick")))
    spec = json.dumps([{f: getattr(t, f) for f in ("key", "run_dir", "target", "options", "env", "cwd")}
                       for t in (done, running, waiting)])
    driver = subprocess.Popen([sys.executable, "-c", CTRL_C_DRIVER, spec], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        while not (starts(running) and (Path(done.run_dir) / "session.json").exists()):
            assert time.monotonic() < deadline and driver.poll() is None, driver.stderr.read() if driver.stderr else ""
            time.sleep(0.2)
        time.sleep(1)  # the running run is past its start
        os.killpg(driver.pid, signal.SIGINT)
        out, err = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    outcome = json.loads(out.splitlines()[-1])
    assert outcome["stopped"] is True, err
    got = {key: (status, interrupted) for key, status, interrupted in outcome["results"]}
    assert got == {"done/1": (0, False), "running/1": (130, True)}, (got, err)
    assert session(done)["run"]["end_reason"] == "exited"
    assert session(running)["run"]["end_reason"] == "interrupted"  # it saved what it had
    assert not starts(waiting) and not Path(waiting.run_dir).exists()


@pytest.mark.parametrize(("kind", "module"), [("slurm", "submitit"), ("ray", "ray")])
def test_missing_extra_names_it(kind: str, module: str, tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import sys
        sys.modules[{module!r}] = None  # as if not installed: its import fails
        from dynaprof.errors import DynaprofError
        from dynaprof.executors import EngineOptions, make_engine
        try:
            make_engine(EngineOptions({kind!r}, slurm_folder={str(tmp_path)!r}))
        except DynaprofError as e:
            print("DynaprofError:", e)
        print("ray started:", "ray" in sys.modules and sys.modules["ray"] is not None)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert f"DynaprofError: --executor {kind} needs the {module} package: pip install 'dynaprof[{kind}]'" in out.stdout
    assert "ray started: False" in out.stdout


# ---------------------------------------------------------------- Slurm


@pytest.fixture(scope="module")
def slurm() -> Iterator[slurm_cluster.SlurmCluster]:
    with slurm_cluster.start() as cluster:
        if isinstance(cluster, str):
            pytest.skip(f"no one-node Slurm here: {cluster}")
        old = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = str(cluster.conf)  # sbatch, squeue and submitit's calls read it
        try:
            yield cluster
        finally:
            restore_env("SLURM_CONF", old)


def slurm_engine(tmp_path: Path, workers: int = 2) -> Any:
    # an hour, the CLI's default: submitit takes a signal in the first 80% of it (and before the last
    # 10 minutes) for a preemption, later for the time limit
    return make_engine(EngineOptions("slurm", workers=workers, slurm_folder=str(tmp_path / ".submitit"),
                                     slurm_partition="debug", timeout_min=60))


def slurm_job_ids(tmp_path: Path) -> list[str]:
    """The Slurm tasks that ran, by submitit's folders with a task log in them (``ARRAY_INDEX`` for
    an array's task, a job id alone for a single job; an array's own folder has its script only)."""
    return sorted(p.name for p in (tmp_path / ".submitit").iterdir() if list(p.glob("*_log.out")))


@pytest.mark.torch
def test_slurm_job_array(slurm: slurm_cluster.SlurmCluster, tmp_path: Path, script: Path,
                         caplog: pytest.LogCaptureFixture) -> None:
    tasks = [task(tmp_path, script, "alpha/1", "compile", "alpha"), task(tmp_path, script, "beta/1", "compile", "beta")]
    engine = slurm_engine(tmp_path)
    assert engine.cluster == "slurm"
    results, retried, _ = run(engine, tasks)
    assert retried == []
    for t in tasks:
        check_compiled(t, results[t.key])
        assert results[t.key].host == slurm.host
    # one array, a task per run: submitit's folders are ARRAY_0 and ARRAY_1
    ids = slurm_job_ids(tmp_path)
    assert len(ids) == 2 and {i.split("_")[1] for i in ids} == {"0", "1"} and len({i.split("_")[0] for i in ids}) == 1
    deadline = time.monotonic() + 60  # the result file comes before the task has ended
    while "JobState=COMPLETED" not in (shown := slurm.run("scontrol", "show", "job", ids[0]).stdout):
        assert time.monotonic() < deadline, shown
        time.sleep(0.5)
    assert f"ArrayJobId={ids[0].split('_')[0]} ArrayTaskId=0" in shown, shown
    # no accounting here: submitit's sacct fails on every poll, and its warning is said once
    assert [r.name for r in caplog.records if "Bypassing sacct error" in r.getMessage()] == ["submitit"]


def test_slurm_died_is_retried_once(slurm: slurm_cluster.SlurmCluster, tmp_path: Path, script: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """In one array: `dynaprof run` killed (the task returns its status), and the task's own worker
    killed (submitit's process: no result at all; Slurm says FAILED, read with squeue since this
    cluster has no accounting for sacct). Each is retried once, as a job of its own."""
    from dynaprof.executors import submitit_slurm

    monkeypatch.setattr(submitit_slurm, "LOST_GRACE_S", 2.0)  # a local disk shows the result file at once
    killed_run, lost = task(tmp_path, script, "run/1", "kill-run"), task(tmp_path, script, "worker/1", "kill-worker")
    results, retried, _ = run(slurm_engine(tmp_path), [killed_run, lost])
    check_retried(killed_run, results[killed_run.key], "dynaprof run was killed by SIGKILL", retried)
    check_retried(lost, results[lost.key], "without a result: its worker was lost", retried)
    ids = slurm_job_ids(tmp_path)  # an array of two tasks, then one job per retry
    assert len(ids) == 4 and len([i for i in ids if "_" in i]) == 2, ids


def test_submitit_local_cluster(tmp_path: Path, script: Path) -> None:
    """``--slurm-cluster local``: the same calls on submitit's own local executor, no Slurm (its
    jobs have no sacct or squeue to ask), a run killed retried once as on Slurm."""
    quick, killed = task(tmp_path, script, "quick/1", "quick"), task(tmp_path, script, "killed/1", "kill-run")
    engine = make_engine(EngineOptions("slurm", workers=2, slurm_folder=str(tmp_path / ".submitit"),
                                       slurm_cluster="local", timeout_min=10))
    assert engine.cluster == "local"
    results, retried, _ = run(engine, [quick, killed])
    assert (results[quick.key].exit_status, results[quick.key].attempt) == (0, 1)
    assert session(quick)["run"]["argv"] == quick.target
    check_retried(killed, results[killed.key], "dynaprof run was killed by SIGKILL", retried)


def test_squeue_lines_name_their_tasks() -> None:
    """An array's tasks not started yet are one squeue line: each must count as pending, not gone."""
    from dynaprof.executors.submitit_slurm import array_task_ids

    assert array_task_ids("12_3") == ["12_3"] and array_task_ids("13") == ["13"]
    assert array_task_ids("12_[4-6,9%2]") == ["12_4", "12_5", "12_6", "12_9"]


def test_slurm_requeues_a_preempted_task(slurm: slurm_cluster.SlurmCluster, tmp_path: Path, script: Path) -> None:
    """Preemption as Slurm signals it to submitit (USR2 to the task): submitit checkpoints our call
    and requeues the task; it runs again from the start and its result is the first attempt's (a
    requeue is Slurm's, not a retry). Slurm holds a requeued job ~2 minutes; the test lets it go
    at once with ``scontrol update StartTime=now``."""
    t = task(tmp_path, script, "pre/1", "preempted")
    engine = slurm_engine(tmp_path, workers=1)
    results: list[TaskResult] = []
    retried: list[TaskResult] = []
    (fut,) = engine.submit([t])
    deadline = time.monotonic() + 60
    while not starts(t) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert starts(t), "the task never started"
    (job_id,) = slurm_job_ids(tmp_path)
    time.sleep(1)
    slurm.run("scancel", "--signal=USR2", job_id)
    deadline = time.monotonic() + 60
    while not {"Restarts=1", "JobState=PENDING"} <= set((shown := slurm.run("scontrol", "show", "job", job_id)
                                                         .stdout).split()):
        assert time.monotonic() < deadline, shown
        time.sleep(0.5)
    slurm.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")  # requeued: held ~2 minutes
    # the loop over the future already submitted: what run_all does after its submit
    from dynaprof import executors

    deadline = time.monotonic() + 120
    while not fut.done():
        assert time.monotonic() < deadline, slurm.run("scontrol", "show", "job", job_id).stdout
        time.sleep(executors.POLL_S)
    results.append(fut.result())
    engine.close()
    (r,) = results
    assert retried == [] and (r.exit_status, r.error, r.attempt) == (0, None, 1), r
    assert len(starts(t)) == 2
    log = next((tmp_path / ".submitit" / job_id).glob("*_log.err")).read_text()
    assert "Caught signal SIGUSR2" in log and "this job is preempted" in log and "DUE TO JOB REQUEUE" in log, log
    assert session(t)["run"]["end_reason"] == "exited"


# ---------------------------------------------------------------- Ray


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def ray_engine(shared_fs: bool) -> Any:
    return make_engine(EngineOptions("ray", workers=2, shared_fs=shared_fs))


def run_folder_option(s: dict[str, Any]) -> str:
    command: list[str] = s["run"]["command"]
    return command[command.index("-o") + 1]


@pytest.mark.torch
def test_ray_run_folder_through_the_object_store(ray_cluster: Any, tmp_path: Path, script: Path) -> None:
    tasks = [task(tmp_path, script, "alpha/1", "compile", "alpha"), task(tmp_path, script, "beta/1", "compile", "beta")]
    engine = ray_engine(shared_fs=False)
    assert any("object store" in n for n in engine.notes)
    results, retried, _ = run(engine, tasks)
    assert retried == [] and ray_cluster.is_initialized()  # a cluster it joined is left running
    for t in tasks:
        s = check_compiled(t, results[t.key])
        # written on the worker in a folder of its own, sent back as bytes, unpacked at NAME/K
        written = run_folder_option(s)
        assert written != t.run_dir and written.endswith("/run") and not Path(written).exists()
        assert results[t.key].packed is None
    assert not list((tmp_path / "out").rglob(".unpack-*"))


@pytest.mark.torch
def test_ray_shared_filesystem(ray_cluster: Any, tmp_path: Path, script: Path) -> None:
    t = task(tmp_path, script, "alpha/1", "compile", "alpha")
    results, retried, _ = run(ray_engine(shared_fs=True), [t])
    assert retried == []
    assert run_folder_option(check_compiled(t, results[t.key])) == t.run_dir  # written in place


def test_ray_worker_killed_is_retried_once(ray_cluster: Any, tmp_path: Path, script: Path) -> None:
    """The Ray worker running a task is killed (SIGKILL): Ray reports the task failed, it is
    retried once (not by Ray as well: max_retries=0) and the orphaned `dynaprof run` does not run on."""
    t = task(tmp_path, script, "worker/1", "kill-worker")
    results, retried, _ = run(ray_engine(shared_fs=False), [t])
    check_retried(t, results[t.key], "Ray task failed: WorkerCrashedError", retried)
    first_run_pid = starts(t)[0][1]
    deadline = time.monotonic() + 30
    while Path(f"/proc/{first_run_pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{first_run_pid}").exists(), "the first attempt's dynaprof run outlived its worker"


def test_a_module_target_runs_as_dynaprof_run_m_takes_it(tmp_path: Path) -> None:
    """``run --repeat --executor`` of ``-m MODULE``: the task's target goes to ``dynaprof run -m``
    (after ``--`` it would be taken for a script named ``-m``)."""
    from dynaprof.executors.run_task import run_task

    (tmp_path / "zoo_mod.py").write_text("import sys\nprint('module ran with', sys.argv[1:])\n")
    task = RunTask("m/1", str(tmp_path / "out" / "m" / "1"), ["-m", "zoo_mod", "--flag"], ["--sampler", "none"],
                   cwd=str(tmp_path))
    result = run_task(task)
    assert result.exit_status == 0, result.error
    assert "module ran with ['--flag']" in Path(task.log).read_text()
    session = json.loads((tmp_path / "out" / "m" / "1" / "session.json").read_text())
    assert session["run"]["target"] == "zoo_mod"
