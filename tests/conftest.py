"""Shared fixtures: running the dynaprof CLI for real, once per sample, on the samples."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CHROMIUM, CHROMIUM_ARGS, playwright

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def load_benchmark(name: str) -> types.ModuleType:
    """``benchmarks/<name>.py`` as a module (its measuring functions are tested too)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


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


def plain_python(tmp: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    """Write ``source`` to ``tmp/name`` and run it with plain python (what a profiled run's output
    is compared with); asserts it ran."""
    script = tmp / name
    script.write_text(source)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium through Playwright (the browser tests); skipped where either is missing."""
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which(CHROMIUM)):
        pytest.skip(f"chromium not found at {CHROMIUM}")
    with playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        except Exception as e:  # pragma: no cover - depends on the machine
            pytest.skip(f"chromium does not start: {e}")
        yield b
        b.close()
