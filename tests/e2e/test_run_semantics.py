"""`dynaprof run` runs the script exactly as `python script.py` would (no torch needed here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dynaprof.model import load_session
from tests.conftest import run_dynaprof

PROBE = """
import json, os, sys
data = {"argv": sys.argv, "name": __name__, "path0": sys.path[0], "cwd": os.getcwd(),
        "stdin": sys.stdin.read(), "file": __file__}
print("PROBE " + json.dumps(data))
"""


def _probe(stdout: str) -> dict[str, object]:
    line = next(x for x in stdout.splitlines() if x.startswith("PROBE "))
    return json.loads(line[6:])  # type: ignore[no-any-return]


def test_script_sees_what_python_gives_it(tmp_path: Path) -> None:
    sub = tmp_path / "pkgdir"
    sub.mkdir()
    (sub / "probe.py").write_text(PROBE)
    proc = run_dynaprof(
        ["run", "-q", "-o", str(tmp_path / "r"), "pkgdir/probe.py", "a", "--b", "-o", "x"], cwd=tmp_path, stdin="hello"
    )
    assert proc.returncode == 0, proc.stderr
    got = _probe(proc.stdout)
    import subprocess

    plain = subprocess.run(
        [sys.executable, "pkgdir/probe.py", "a", "--b", "-o", "x"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        input="hello",
    )
    want = _probe(plain.stdout)
    assert got == want
    assert got["argv"] == ["pkgdir/probe.py", "a", "--b", "-o", "x"]
    assert got["name"] == "__main__" and got["stdin"] == "hello"
    assert got["path0"] == str(sub.resolve())


def test_module_mode_matches_python_m(tmp_path: Path) -> None:
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tool.py").write_text(PROBE)
    proc = run_dynaprof(["run", "-q", "-o", str(tmp_path / "r"), "-m", "mypkg.tool", "x", "-y"], cwd=tmp_path, stdin="")
    assert proc.returncode == 0, proc.stderr
    got = _probe(proc.stdout)
    import subprocess

    plain = subprocess.run(
        [sys.executable, "-m", "mypkg.tool", "x", "-y"], cwd=tmp_path, capture_output=True, text=True, input=""
    )
    assert got == _probe(plain.stdout)
    assert got["argv"][1:] == ["x", "-y"]


@pytest.mark.parametrize(
    "body, status",
    [
        ("import sys; sys.exit(3)", 3),
        ("import sys; sys.exit()", 0),
        ("import sys; sys.exit('bye')", 1),
        ("raise ValueError('boom')", 1),
        ("import os; os._exit(7)", 7),
        ("pass", 0),
    ],
)
def test_exit_status_is_the_scripts(tmp_path: Path, body: str, status: int) -> None:
    (tmp_path / "s.py").write_text(body + "\n")
    proc = run_dynaprof(["run", "-q", "-o", str(tmp_path / "r"), "s.py"], cwd=tmp_path)
    assert proc.returncode == status, proc.stderr
    session = load_session(tmp_path / "r")  # whatever happened, a valid session was saved
    assert session.run.exit_status == status
    assert session.frames == []


def test_uncaught_exception_prints_the_users_traceback(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("def f():\n    raise ValueError('boom')\nf()\n")
    proc = run_dynaprof(["run", "-q", "-o", str(tmp_path / "r"), "s.py"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback (most recent call last):" in proc.stderr
    assert 's.py", line 3, in <module>' in proc.stderr
    assert "ValueError: boom" in proc.stderr
    assert "runpy" not in proc.stderr and "dynaprof/capture" not in proc.stderr
    assert load_session(tmp_path / "r").run.end_reason == "exception"


def test_os_exit_still_leaves_a_session_marked_incomplete(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("import os\nos._exit(0)\n")
    proc = run_dynaprof(["run", "-q", "-o", str(tmp_path / "r"), "s.py"], cwd=tmp_path)
    assert proc.returncode == 0
    s = load_session(tmp_path / "r")
    assert not s.run.complete and s.run.end_reason == "lost"


def test_no_compile_is_said_plainly(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("print('hi')\n")
    proc = run_dynaprof(["run", "-o", str(tmp_path / "r"), "s.py"], cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout == "hi\n"  # the script owns stdout; dynaprof talks on stderr
    assert "no torch.compile compilation happened" in proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "missing.py"], "can't open file 'missing.py': no such file"),
        (["run"], "nothing to run"),
        (["run", "."], "it is a folder"),
        (["run", "--rate", "0", "s.py"], "--rate must be"),
        (["run", "--native", "s.py"], "--native needs --sampler py-spy"),
        (["report", "nowhere"], "nowhere: no such file or folder"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "s.py").write_text("pass\n")
    proc = run_dynaprof(args, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_existing_output_folder_is_refused_without_force(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("pass\n")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "keep.txt").write_text("x")
    proc = run_dynaprof(["run", "-o", "r", "s.py"], cwd=tmp_path)
    assert proc.returncode == 2 and "pass --force" in proc.stderr
    proc = run_dynaprof(["run", "-q", "--force", "-o", "r", "s.py"], cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "r" / "keep.txt").exists()


def test_default_run_folder_is_unique(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("pass\n")
    for _ in range(2):
        assert run_dynaprof(["run", "-q", "s.py"], cwd=tmp_path).returncode == 0
    runs = sorted((tmp_path / "dynaprof-runs").iterdir())
    assert len(runs) == 2 and all(r.name.startswith("s-") for r in runs)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        ('{"schema_version": 42, "run": {}}', "newer dynaprof"),
        ('{"schema_version": 1, "run": {}}', "invalid session"),
    ],
)
def test_report_on_bad_session_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "session.json").write_text(content)
    proc = run_dynaprof(["report", "r"], cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
