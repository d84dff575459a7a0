"""How a run was made, end to end: a real `dynaprof run` records the command, versions, compile
environment and changed compiler settings, writes no secret, and its summaries carry the repro line
(the rules themselves, on hand-built sessions: ``tests/unit/test_how_made.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dynaprof.analysis import how_made
from dynaprof.model import ConfigChange, load_session
from dynaprof.model.environment import REDACTED
from tests.conftest import run_dynaprof
from tests.helpers import GH_TOKEN, RANDOM_SECRET, recompile_limit_name

SCRIPT = """
import sys, torch
torch._dynamo.config.cache_size_limit = 3  # changed by the script: recorded as it is at the end (2.5+: as the
# recompile_limit it is an alias of)
@torch.compile(backend="eager")
def f(x):
    return x.sin() + 1
f(torch.randn(3))
print("ARGV", sys.argv[1:])
"""


@pytest.mark.torch
def test_a_run_records_how_it_was_made_and_no_secret(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(SCRIPT)
    env = {"TORCH_LOGS_OUT": str(tmp_path / "logs.txt"), "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
           "TORCH_HUB_TOKEN": RANDOM_SECRET + "-env", "MY_PASSWORD": "hunter2-env"}
    proc = run_dynaprof(["run", "-o", "r", str(tmp_path / "job.py"), "--api-key", RANDOM_SECRET, "--token=" + GH_TOKEN,
                         "--lr", "0.1"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"ARGV ['--api-key', '{RANDOM_SECRET}', '--token={GH_TOKEN}', '--lr', '0.1']" in proc.stdout  # untouched
    run = load_session(tmp_path / "r").run
    import torch

    assert run.torch_git_version == torch.version.git_version
    assert run.env is not None and run.env["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "0"
    assert run.env["TORCH_HUB_TOKEN"] == REDACTED and "MY_PASSWORD" not in run.env
    assert run.config is not None and ConfigChange("dynamo", recompile_limit_name(), "3", "8") in run.config
    assert run.argv == [str(tmp_path / "job.py"), "--api-key", REDACTED, f"--token={REDACTED}", "--lr", "0.1"]
    assert how_made.script_path(run) == "job.py"
    written = [p for p in (tmp_path / "r").rglob("*") if p.is_file()]
    assert len(written) > 3
    for p in written:
        data = p.read_bytes()
        for secret in (RANDOM_SECRET, GH_TOKEN, b"hunter2"):
            assert (secret.encode() if isinstance(secret, str) else secret) not in data, p
    assert json.loads((tmp_path / "r" / "session.json").read_text())["run"]["config"]
    # the repro line: in summary.txt and summary.md (the first screen says where it is)
    summary = (tmp_path / "r" / "summary.txt").read_text()
    assert "TORCHINDUCTOR_FX_GRAPH_CACHE=0 " in summary and "dynaprof run -o r job.py" in summary
    assert "the repro: in summary.md" in " ".join(proc.stderr.split())
