"""``dynaprof suite`` for real on the local executor: each entry and repeat a fresh ``dynaprof
run`` with its folder at ``DIR/NAME/K``, a failed run recorded while the suite goes on, ``--resume``
running only what is missing, Ctrl-C keeping what finished, and ``compare``/``check`` on suites.
The Slurm and Ray engines are started for real in tests/e2e/test_executors.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dynaprof.model.suite import load_suite, save_suite
from tests.conftest import ROOT, run_dynaprof
from tests.helpers import ctrl_c_once

TINY = """import os
import torch

print("flag", os.environ.get("ZOO_FLAG"))

@torch.compile(backend="eager")
def f(x):
    return torch.sin(x) + {k}

f(torch.ones(3))
"""


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite of two tiny compiles and a script that fails, run once with two workers."""
    where = tmp_path_factory.mktemp("zoo")
    for k, name in enumerate(("sin1", "sin2"), 1):
        (where / f"{name}.py").write_text(TINY.format(k=k))
    (where / "broken.py").write_text("raise SystemExit('no model here')\n")
    (where / "zoo.toml").write_text(
        '[[entry]]\nname = "sin1"\nscript = "sin1.py"\n\n[[entry]]\nname = "sin2"\nscript = "sin2.py"\n'
        'env = { ZOO_FLAG = "on" }\n\n[[entry]]\nname = "broken"\nscript = "broken.py"\n')
    r = run_dynaprof(["suite", str(where / "zoo.toml"), "-o", str(where / "out"), "--workers", "2"], cwd=where,
                     timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    (where / "stderr.txt").write_text(r.stderr)
    return where


def test_each_entry_is_a_run_folder_and_the_suite_reports_them(zoo: Path) -> None:
    out = zoo / "out"
    suite = load_suite(out)
    assert [e.name for e in suite.entries] == ["sin1", "sin2", "broken"]
    assert sorted((r.entry, r.repeat, r.run_dir) for r in suite.runs) == [
        ("broken", 1, "broken/1"), ("sin1", 1, "sin1/1"), ("sin2", 1, "sin2/1")]
    ok = {r.entry: r for r in suite.runs if r.ok}
    assert set(ok) == {"sin1", "sin2"} and all(r.measures["total"] > 0 for r in ok.values())
    assert all((out / name / "1" / "session.json").is_file() for name in ok)
    session = json.loads((out / "sin1" / "1" / "session.json").read_text())
    assert [f["name"] for f in session["frames"]] == ["f"]
    # each run's output in its log; an entry's env set in its runs only
    assert "flag on" in (out / "sin2" / "1.log").read_text() and "flag None" in (out / "sin1" / "1.log").read_text()
    (broken,) = [r for r in suite.runs if r.entry == "broken"]
    assert broken.exit_status == 1 and broken.error == "exit status 1: no model here"
    assert suite.torch_version and suite.workers == 2 and suite.cold
    md = (out / "summary.md").read_text()
    assert "2 runs at a time on one machine" in md and "run 1: exit status 1: no model here" in md
    assert "| sin1 |" in md and "| sin2 |" in md
    html = (out / "report.html").read_text()
    assert 'href="sin1/1/report.html"' in html and "<svg" in html
    assert (out / "causes.svg").read_text().startswith("<svg")
    err = (zoo / "stderr.txt").read_text()
    assert "3 models x 1 run on the local executor" in err and "broken/1: failed: exit status 1" in err


def test_resume_runs_only_what_is_missing(zoo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    subprocess.run(["cp", "-r", str(zoo / "out"), str(out)], check=True)
    suite = load_suite(out)
    suite.runs = [r for r in suite.runs if r.entry != "sin2"]  # as after a Ctrl-C before sin2 came back
    save_suite(suite, out)
    kept = (out / "sin1" / "1" / "session.json").stat().st_mtime_ns
    r = run_dynaprof(["suite", "--resume", str(out)], cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "2 to run" in r.stderr  # sin2 and the broken one, never sin1
    assert (out / "sin1" / "1" / "session.json").stat().st_mtime_ns == kept
    again = load_suite(out)
    assert sorted(r.entry for r in again.runs if r.ok) == ["sin1", "sin2"]


def test_compare_and_check_take_suites(zoo: Path, tmp_path: Path) -> None:
    out = zoo / "out"
    r = run_dynaprof(["compare", str(out), str(out), "-o", str(tmp_path / "cmp")], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "no model of 3 changed outside the noise" in r.stderr
    assert "| sin1 |" in (tmp_path / "cmp" / "compare.md").read_text()
    r = run_dynaprof(["check", str(out), "--max-compile-time", "0"], cwd=tmp_path)
    assert r.returncode == 1 and "sin1: compile time" in r.stdout and "sin2: compile time" in r.stdout
    r = run_dynaprof(["check", str(out), "--max-compile-time", "600"], cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("ok: compile time of 2 models within"), r.stdout
    r = run_dynaprof(["check", str(out), "--base", str(out), "--max-regression", "10"], cwd=tmp_path)
    assert r.returncode == 0 and "no model of 2 slower than 10% beyond the noise" in r.stdout, r.stdout
    r = run_dynaprof(["check", str(out), "--max-guards", "3"], cwd=tmp_path)
    assert r.returncode == 2 and "budgets of a run" in r.stderr


def test_ctrl_c_keeps_the_runs_that_finished(tmp_path: Path) -> None:
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"{name}.py").write_text("import time\ntime.sleep(1.0)\n")
    out = tmp_path / "out"
    err = ctrl_c_once(["suite", str(tmp_path), "-o", str(out)], tmp_path, out / "b" / "1.log")
    suite = load_suite(out)
    assert suite.interrupted and any(r.entry == "a" and r.ok for r in suite.runs), suite.runs
    assert not any(r.entry in ("c", "d") for r in suite.runs)
    assert (out / "summary.md").exists() and "--resume" in err
    r = run_dynaprof(["suite", "--resume", str(out)], cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(r.entry for r in load_suite(out).runs if r.ok) == ["a", "b", "c", "d"]


def test_the_dashboards_csv_is_a_suite_to_compare_with(zoo: Path, tmp_path: Path) -> None:
    data = ROOT / "tests" / "data" / "harness"
    csvs = sorted(str(p) for p in data.glob("inductor_*.csv"))
    r = run_dynaprof(["suite", "--harness-csv", *csvs, "-o", str(tmp_path / "dash")], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    dash = load_suite(tmp_path / "dash")
    assert dash.origin == "harness" and dash.command[:2] == ["dynaprof", "suite"]
    assert "from PyTorch's benchmark harness CSV" in (tmp_path / "dash" / "summary.md").read_text()
    # beside dynaprof's own suite: no model in common, each said to be on one side only
    r = run_dynaprof(["compare", str(tmp_path / "dash"), str(zoo / "out"), "-o", str(tmp_path / "cmp")],
                     cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "| BERT\\_pytorch |" in md and "only in BASE" in md and "only in NEW" in md
    r = run_dynaprof(["suite", "--harness-csv", str(data / "README.md"), "-o", str(tmp_path / "bad")], cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("dynaprof: error:"), r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("engine", [["--executor", "slurm", "--slurm-cluster", "local"], ["--executor", "ray"]],
                         ids=["submitit-local", "ray"])
def test_the_suite_command_runs_on_each_engine(tmp_path: Path, engine: list[str]) -> None:
    """``dynaprof suite --executor ...`` end to end through each engine's own API (submitit's local
    cluster, a Ray cluster the suite starts); the engines themselves, Slurm included, are started
    for real in tests/e2e/test_executors.py."""
    pytest.importorskip("submitit" if "slurm" in engine else "ray")
    for k in (1, 2):
        (tmp_path / f"sin{k}.py").write_text(TINY.format(k=k))
    out = tmp_path / "out"
    r = run_dynaprof(["suite", str(tmp_path), "-o", str(out), "--workers", "2", *engine], cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    suite = load_suite(out)
    assert suite.executor == engine[1] and sorted(r.entry for r in suite.runs if r.ok) == ["sin1", "sin2"]
    assert all((out / f"sin{k}" / "1" / "session.json").is_file() for k in (1, 2))


@pytest.mark.parametrize("command", [["suite", "{dir}"], ["sweep", "--param", "N=1,2", "{dir}/a.py"]])
def test_a_bad_executor_option_is_one_line_before_any_folder(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "a.py").write_text("pass\n")
    *head, last = [c.format(dir=tmp_path) for c in command]  # a sweep's script takes what follows it
    r = run_dynaprof([*head, "-o", str(tmp_path / "out"), "--workers", "0", last], cwd=tmp_path)
    assert r.returncode == 2 and r.stderr == "dynaprof: error: --workers must be at least 1, got 0\n", r.stderr
    assert not (tmp_path / "out").exists()
