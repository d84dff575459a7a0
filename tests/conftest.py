"""Shared fixtures: running the dynaprof CLI for real, once per sample, on the samples."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str
    run_dir: Path


def run_dynaprof(
    args: list[str], cwd: Path, timeout: float = 300, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.setdefault("PYTHONPATH", str(ROOT))
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "dynaprof", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        env=full_env,
    )


def profile(tmp: Path, script_args: list[str], *opts: str, timeout: float = 300) -> CliResult:
    run_dir = tmp / "run"
    proc = run_dynaprof(["run", "-o", str(run_dir), *opts, *script_args], cwd=tmp, timeout=timeout)
    return CliResult(proc.returncode, proc.stdout, proc.stderr, run_dir)


@pytest.fixture(scope="session")
def seed_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CliResult]:
    """The seed sample profiled with and without parametrization (eager backend, CPU)."""
    out = {}
    for name, flag in (("parametrized", "--parametrize"), ("plain", "--no-parametrize")):
        tmp = tmp_path_factory.mktemp(name)
        out[name] = profile(tmp, [str(SAMPLES / "parametrized_linear.py"), flag])
    return out
