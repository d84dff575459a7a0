"""The ``dynaprof run`` child starts as ``python script.py`` itself (``capture/boot/``).

Its ``sitecustomize`` must leave no trace the script can see: ``PYTHONPATH`` back as it was (set
or unset), dynaprof's folders off ``sys.path``, a ``sitecustomize`` of the user's still run, and
the script on the interpreter's first frame. Each case is checked against plain ``python``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from dynaprof.model.store import load_session
from tests.conftest import ROOT

pytestmark = pytest.mark.torch

SCRIPT = """\
import inspect, os, sys
print("path", sys.path)
print("PYTHONPATH", os.environ.get("PYTHONPATH"))
print("sitecustomize", getattr(sys.modules.get("sitecustomize"), "MARK", None), os.environ.get("SITE_RAN"))
print("frames under the script", len(inspect.stack()) - 1)
import torch
print(torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2)).tolist())
if len(sys.argv) > 1:
    raise SystemExit(int(sys.argv[1]))
"""


def _env(pythonpath: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return env


def _both(tmp: Path, pythonpath: str | None, *args: str) -> tuple[subprocess.CompletedProcess[str], ...]:
    script = tmp / "state.py"
    script.write_text(SCRIPT)
    plain = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=tmp,
                           env=_env(pythonpath), timeout=300)
    # dynaprof itself imported from the checkout, as an installed copy would be: its root is not
    # on the script's PYTHONPATH unless the case puts it there
    profiled = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                               "from dynaprof.cli import main; sys.exit(main())", str(ROOT), "run", "-q",
                               "-o", str(tmp / "run"), str(script), *args],
                              capture_output=True, text=True, cwd=tmp, env=_env(pythonpath), timeout=300)
    return plain, profiled


@pytest.mark.parametrize("pythonpath", [None, "", "extra"])
def test_the_script_sees_what_python_gives_it(tmp_path: Path, pythonpath: str | None) -> None:
    if pythonpath == "extra":
        (tmp_path / "extra").mkdir()
        pythonpath = str(tmp_path / "extra")
    plain, profiled = _both(tmp_path, pythonpath, "3")
    assert plain.returncode == profiled.returncode == 3, profiled.stderr
    assert profiled.stdout == plain.stdout
    assert "frames under the script 0" in profiled.stdout
    session = load_session(tmp_path / "run")
    assert session.run.exit_status == 3 and len(session.frames) == 1
    assert session.run.platform == platform.platform()  # the launcher's, same machine and interpreter


def test_a_sitecustomize_of_the_users_still_runs(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nMARK = 'users'\nos.environ['SITE_RAN'] = 'yes'\n")
    plain, profiled = _both(tmp_path, str(site))
    assert plain.returncode == profiled.returncode == 0, profiled.stderr
    assert "sitecustomize users yes" in plain.stdout
    assert profiled.stdout == plain.stdout


def test_an_uncaught_exception_is_the_interpreters_own(tmp_path: Path) -> None:
    script = tmp_path / "boom.py"
    script.write_text("def f():\n    raise ValueError('boom')\nf()\n")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    profiled = subprocess.run([sys.executable, "-m", "dynaprof", "run", "-q", "-o", str(tmp_path / "run"),
                               str(script)], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert plain.returncode == profiled.returncode == 1
    assert plain.stderr.strip() in profiled.stderr  # the same traceback, starting at the script
    session = load_session(tmp_path / "run")
    assert session.run.end_reason == "exception" and session.run.exit_status == 1


def test_the_child_imports_little_before_the_script(tmp_path: Path) -> None:
    """What the child imports before the script sits ahead of the script's modules in
    ``sys.modules``, which Inductor's cache-key pickling scans (``whichmodule``) on every compile:
    the boot leaves out what only the end of the run or a measurement needs."""
    script = tmp_path / "mods.py"
    script.write_text("import json, sys\nprint(json.dumps(sorted(sys.modules)))\n")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    profiled = subprocess.run([sys.executable, "-m", "dynaprof", "run", "-q", "--sampler", "none", "-o",
                               str(tmp_path / "run"), str(script)], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert plain.returncode == profiled.returncode == 0, profiled.stderr
    extra = set(json.loads(profiled.stdout.splitlines()[-1])) - set(json.loads(plain.stdout.splitlines()[-1]))
    heavy = {"tempfile", "shutil", "subprocess", "socket", "importlib.abc", "statistics", "hashlib", "random",
             "dynaprof.model.session", "dynaprof.model.store", "dynaprof.capture.torch_hooks"}
    assert extra & heavy == set(), sorted(extra & heavy)
    stdlib = sorted(m for m in extra if not m.startswith("dynaprof") and m != "sitecustomize")
    ours = sorted(m for m in extra if m.startswith("dynaprof"))
    assert len(stdlib) <= 28 and len(ours) <= 20, (stdlib, ours)  # 24 and 16 on 2026-12-06
