"""The live progress line of ``dynaprof run`` (capture/progress.py): drawn on a terminal only,
erased before the script's own output, never in the script's stdout."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from dynaprof.capture.progress import ERASE, Progress
from tests.conftest import ROOT
from tests.helpers import sin_loop

SCRIPT = """\
import sys, torch
print("OUT-BEFORE")
""" + sin_loop(400) + """f(torch.randn(4))
print("ERR-AFTER", file=sys.stderr)
print("OUT-AFTER")
"""


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_status_names_compile_phase_attempt_and_elapsed(tmp_path: Path) -> None:
    clock = _Clock()
    journal = tmp_path / "journal.jsonl"
    journal.write_text("")
    p = Progress(journal, io.StringIO(), 70, clock=clock)
    p.feed({"t": "compile_start", "key": "1/0", "cid": "1/0"})
    assert p.status() is None  # too young to draw
    p.feed({"t": "span", "key": "1/0", "name": "compile_attempt_1", "ph": "B"})
    p.feed({"t": "span", "key": "1/0", "name": "bytecode_tracing", "ph": "B"})
    clock.t = 1.5
    text = p.status()
    assert text == "dynaprof: compiling 1/0 · bytecode_tracing · attempt 2 · 1.5 s"
    p.feed({"t": "span", "key": "1/0", "name": "bytecode_tracing", "ph": "E"})
    p.feed({"t": "span", "key": "1/0", "name": "build_guards\x1b[31m", "ph": "B"})
    text = p.status()
    assert text is not None and "\x1b" not in text and len(text) < 70
    p.feed({"t": "compile_end", "key": "1/0"})
    assert p.status() is None and p.done == 1
    p.stop()


def test_poll_draws_then_erases(tmp_path: Path) -> None:
    clock = _Clock()
    journal = tmp_path / "journal.jsonl"
    journal.write_text('{"t":"compile_start","key":"0/0","cid":"0/0"}\n')
    out = io.StringIO()
    p = Progress(journal, out, 80, clock=clock)
    p.poll()  # seen now: too young to draw
    assert out.getvalue() == ""
    clock.t = 1.0
    p.poll()
    assert out.getvalue() == ERASE + "dynaprof: compiling 0/0 · tracing · 1.0 s\r" and p.drawn
    with journal.open("a") as fh:
        fh.write('{"t":"compile_end","key":"0/0"}\n{"t":"torn')
    p.poll()
    assert out.getvalue().endswith("\r" + ERASE) and not p.drawn
    p.stop()
    assert not p.flag.exists()


def _run_on_pty(tmp_path: Path, stdout_pipe: bool) -> tuple[str, str]:
    (tmp_path / "s.py").write_text(SCRIPT)
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80")
    env.pop("DYNAPROF_PROGRESS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dynaprof", "run", "-o", "out", "s.py"],
        stdin=slave, stdout=subprocess.PIPE if stdout_pipe else slave, stderr=slave, cwd=tmp_path, env=env,
        start_new_session=True,
    )
    os.close(slave)
    buf = b""
    while True:
        ready, _, _ = select.select([master], [], [], 240)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the pty closed
            break
        if not data:
            break
        buf += data
    out = proc.stdout.read().decode() if proc.stdout else ""
    assert proc.wait(timeout=180) == 0, buf.decode(errors="replace")
    os.close(master)
    return buf.decode(errors="replace"), out


def test_progress_on_a_terminal_is_erased_before_the_scripts_output(tmp_path: Path) -> None:
    term, stdout = _run_on_pty(tmp_path, stdout_pipe=True)
    assert "dynaprof: compiling 0/0" in term, term
    assert "\x1b" not in stdout and stdout.split() == ["OUT-BEFORE", "OUT-AFTER"]  # stdout untouched
    # every drawn line is erased before the script's next output, and the cursor is in column 0
    drawn = term.rindex("dynaprof: compiling")
    after = term.index("ERR-AFTER")
    assert drawn < after and ERASE in term[drawn:after]
    assert term[after - len(ERASE) - 1:after].endswith(ERASE) or term[:after].endswith(ERASE)
    for line in term.replace(ERASE, "\n").replace("\r", "\n").split("\n"):
        assert len(line) <= 100 or "/" in line  # wrapped to COLUMNS=80 (paths aside)


def test_no_progress_line_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80")
    proc = subprocess.run([sys.executable, "-m", "dynaprof", "run", "-o", "out", "s.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stderr and "compiling 0/0" not in proc.stderr
    assert not (tmp_path / "out" / "progress.flag").exists()
