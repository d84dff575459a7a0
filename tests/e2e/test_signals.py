"""Ctrl-C (SIGINT) and SIGTERM during a run leave a valid session with what was compiled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dynaprof.model import load_session
from tests.conftest import ROOT
from tests.helpers import default_sigint

pytestmark = pytest.mark.torch

SCRIPT = """
import sys, time, torch
f = torch.compile(lambda x: x.sin() + 1, backend="eager")
f(torch.ones(4))
print("compiled", flush=True)
time.sleep(600)  # far past every wait below: the signal, not the sleep, ends it
"""


def _start(tmp_path: Path) -> subprocess.Popen[str]:
    (tmp_path / "slow.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "dynaprof", "run", "-o", "run", "slow.py"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            stdin=subprocess.DEVNULL, preexec_fn=default_sigint)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "compiled", proc.stderr.read() if proc.stderr else ""
    return proc


@pytest.mark.parametrize("sig, status, reason", [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 128 + signal.SIGTERM, "signal"),
])
def test_signal_mid_run_saves_the_profile(tmp_path: Path, sig: int, status: int, reason: str) -> None:
    proc = _start(tmp_path)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == status, err
    s = load_session(tmp_path / "run")
    assert len(s.frames) == 1 and s.frames[0].status == "ok"
    assert s.run.end_reason == reason
    assert s.run.exit_status == status
    if sig == signal.SIGTERM:
        assert not s.run.complete
    assert "Traceback" not in err or "KeyboardInterrupt" in err  # the script's own traceback only
    assert (tmp_path / "run" / "summary.txt").exists()


def test_killed_parent_leaves_a_journal_that_report_rebuilds(tmp_path: Path) -> None:
    proc = _start(tmp_path)
    proc.kill()  # the dynaprof parent dies without saving; the child keeps its journal
    proc.wait(timeout=180)
    run = tmp_path / "run"
    assert (run / "journal.jsonl").exists() and not (run / "session.json").exists()
    start = json.loads((run / "journal.jsonl").read_text().splitlines()[0])
    os.kill(start["pid"], signal.SIGKILL)  # the orphaned script
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rep = subprocess.run([sys.executable, "-m", "dynaprof", "report", "run"], cwd=tmp_path, capture_output=True,
                         text=True, env=env, timeout=120)
    assert rep.returncode == 0, rep.stderr
    s = load_session(run)
    assert len(s.frames) == 1 and not s.run.complete
