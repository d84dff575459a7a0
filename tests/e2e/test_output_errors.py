"""Output folders that cannot be written: one line naming the path, exit status 2, no traceback;
for ``dynaprof run`` the script's own exit status and output are what matter most.

Tests run as root in CI, where ``chmod 0o500`` does not stop writes: read-only folders are then
read-only tmpfs mounts (skipped where mounting is not allowed), and a full disk is simulated in
process (``os.replace`` / ``os.fsync`` raising ENOSPC, as a full disk does) and, where mounting is
allowed, with a real 16 KiB tmpfs.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dynaprof.cli import main
from dynaprof.model import load_session
from dynaprof.model.store import save_session
from tests.conftest import run_dynaprof
from tests.factories import seed_session

SCRIPT = "print('hello from the script')\nraise SystemExit(5)\n"


def _saved_run(where: Path) -> Path:
    run = where / "saved"
    save_session(seed_session(), run)
    return run


def _assert_one_line_naming(stderr: str, path: Path | str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("dynaprof: error: "), stderr
    assert str(path) in lines[0], stderr


def _no_temp_files(folder: Path) -> None:
    if folder.is_dir():
        assert [p.name for p in folder.rglob(".*.tmp")] == []  # atomic writes clean up after themselves


# -- a path that cannot be a folder ------------------------------------------------------------------


@pytest.mark.parametrize("command", ["report", "run"])
def test_output_under_a_regular_file(tmp_path: Path, command: str) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "s.py").write_text(SCRIPT)
    source = ["s.py"] if command == "run" else [str(_saved_run(tmp_path))]
    proc = run_dynaprof([command, "-q", "-o", "afile/sub", *source], cwd=tmp_path)
    assert proc.returncode == 2
    _assert_one_line_naming(proc.stderr, "afile/sub")
    assert "hello from the script" not in proc.stdout  # refused before the script ran


@pytest.mark.parametrize("target", ["/proc/dynaprof-test/out", "/proc/self/dynaprof"])
def test_output_in_proc(tmp_path: Path, target: str) -> None:
    proc = run_dynaprof(["report", "-q", "-o", target, str(_saved_run(tmp_path))], cwd=tmp_path)
    assert proc.returncode == 2
    _assert_one_line_naming(proc.stderr, target)


# -- read-only folders -------------------------------------------------------------------------------


def _mount(args: list[str]) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture
def make_read_only(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """Turn a folder (with whatever it holds) read-only: chmod for ordinary users; for root,
    whom chmod does not stop, a tmpfs mount remounted read-only."""
    mounted: list[Path] = []
    modes: list[Path] = []

    def make(folder: Path) -> None:
        if os.geteuid() != 0:
            folder.chmod(0o500)
            modes.append(folder)
            return
        saved = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} if folder.exists() else {}
        folder.mkdir(parents=True, exist_ok=True)
        if not _mount(["-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)]):
            pytest.skip("running as root without permission to mount a read-only tmpfs")
        mounted.append(folder)
        for name, data in saved.items():
            (folder / name).write_bytes(data)
        assert _mount(["-o", "remount,ro", str(folder)])

    yield make
    for folder in modes:
        folder.chmod(0o700)
    for folder in reversed(mounted):
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_report_into_a_read_only_folder(tmp_path: Path, make_read_only: Callable[[Path], None]) -> None:
    out = tmp_path / "ro"
    out.mkdir()
    make_read_only(out)
    proc = run_dynaprof(["report", "-q", "-o", str(out), str(_saved_run(tmp_path))], cwd=tmp_path)
    assert proc.returncode == 2
    _assert_one_line_naming(proc.stderr, out)


def test_report_in_place_in_a_read_only_run_folder(tmp_path: Path, make_read_only: Callable[[Path], None]) -> None:
    run = _saved_run(tmp_path)
    before = (run / "session.json").read_bytes()
    make_read_only(run)
    proc = run_dynaprof(["report", "-q", str(run)], cwd=tmp_path)
    assert proc.returncode == 2
    _assert_one_line_naming(proc.stderr, run)
    assert (run / "session.json").read_bytes() == before


def test_run_into_a_read_only_folder(tmp_path: Path, make_read_only: Callable[[Path], None]) -> None:
    (tmp_path / "s.py").write_text(SCRIPT)
    out = tmp_path / "ro"
    out.mkdir()
    make_read_only(out)
    proc = run_dynaprof(["run", "-q", "-o", str(out), "s.py"], cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2
    _assert_one_line_naming(proc.stderr, out)


# -- a full disk, simulated in process ---------------------------------------------------------------


def _enospc_under(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make os.<name> fail like a full disk for paths under ``folder`` (os.fsync: for any fd)."""
    real = getattr(os, name)

    def failing(*args: Any, **kwargs: Any) -> Any:
        if name == "fsync" or str(folder) in str(args[-1]):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, failing)


@pytest.mark.parametrize("fails", ["replace", "fsync"])
def test_report_on_a_full_disk(
    tmp_path: Path, fails: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    run = _saved_run(tmp_path)
    out = tmp_path / "out"
    _enospc_under(out, fails, monkeypatch)
    rc = main(["report", "-q", "-o", str(out), str(run)])
    assert rc == 2
    err = capfd.readouterr().err
    _assert_one_line_naming(err, out)
    assert "No space left on device" in err
    _no_temp_files(out)
    assert not (out / "session.json").exists()


def test_run_on_a_full_disk_when_saving_keeps_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The child's journal is written; saving the session fails: the journal stays, so once
    there is space again `dynaprof report RUN` rebuilds everything from it."""
    (tmp_path / "s.py").write_text(SCRIPT)
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)
    with monkeypatch.context() as m:
        _enospc_under(out, "replace", m)
        main(["run", "-q", "-o", str(out), "s.py"])
    captured = capfd.readouterr()
    assert "hello from the script" in captured.out
    _assert_one_line_naming(captured.err, out / "session.json")
    _no_temp_files(out)
    assert (out / "journal.jsonl").exists() and not (out / "session.json").exists()
    assert main(["report", "-q", str(out)]) == 0  # space again: rebuilt from the journal
    session = load_session(out)
    assert session.run.exit_status in (None, 5)


def test_run_returns_the_scripts_status_when_saving_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "s.py").write_text(SCRIPT)
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)
    _enospc_under(out, "replace", monkeypatch)
    rc = main(["run", "-q", "-o", str(out), "s.py"])
    capfd.readouterr()
    assert rc == 5


# -- a real full filesystem (root only) ----------------------------------------------------------------


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "tiny"
    folder.mkdir()
    if os.geteuid() != 0 or not _mount(["-t", "tmpfs", "-o", "size=16k", "tmpfs", str(folder)]):
        pytest.skip("needs root and permission to mount a 16 KiB tmpfs")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_report_into_a_filesystem_that_fills_up(tmp_path: Path, tiny_fs: Path) -> None:
    proc = run_dynaprof(["report", "-q", "-o", str(tiny_fs), str(_saved_run(tmp_path))], cwd=tmp_path)
    assert proc.returncode == 2
    _assert_one_line_naming(proc.stderr, tiny_fs)
    assert "No space left on device" in proc.stderr
    _no_temp_files(tiny_fs)


@pytest.mark.torch
def test_run_on_a_filesystem_that_fills_up_leaves_the_script_alone(tmp_path: Path, tiny_fs: Path) -> None:
    (tmp_path / "c.py").write_text(
        "import torch\n"
        "for i in range(3):\n"
        "    torch.compile(lambda x: x.sin() * i, backend='eager')(torch.ones(4))\n"
        "print('script done', flush=True)\n"
        "raise SystemExit(5)\n"
    )
    proc = run_dynaprof(["run", "-q", "-o", str(tiny_fs), "c.py"], cwd=tmp_path, timeout=240)
    assert "script done" in proc.stdout, proc.stderr
    assert proc.returncode == 5
    assert "Traceback" not in proc.stderr
    assert str(tiny_fs) in proc.stderr
