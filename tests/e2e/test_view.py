"""``dynaprof view``: bad input, the loopback report server, snakeviz, and (browser) that snakeviz
really draws dynaprof's reshaped profile of the seed case."""

from __future__ import annotations

import importlib.util
import os
import queue
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from dynaprof.analysis import pstats_tools as pt
from dynaprof.cli import main
from dynaprof.ingest.prof_files import load_table
from dynaprof.run_folder import write_prof
from tests.helpers import CHROMIUM, CHROMIUM_ARGS, ROOT_DIR, default_sigint, dynamo_like, playwright

ROOT = ROOT_DIR


def start_view(*args: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dynaprof", "view", *args, "--no-browser"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: lines.put(proc.stdout.readline() if proc.stdout else ""), daemon=True).start()
    try:
        url = lines.get(timeout=180).strip()
    except queue.Empty:
        proc.kill()
        pytest.fail("dynaprof view printed no URL within 60 s")
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        _, err = proc.communicate(timeout=120)
        pytest.fail(f"no URL: {url!r} {err}")
    return proc, url


def port_of(url: str) -> int:
    return int(url.split("/")[2].rsplit(":", 1)[1])


def answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_missing_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(tmp_path / "nope"), "--no-browser"]) == 2
    assert "no such run folder" in capsys.readouterr().err


def test_no_cprofile_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(tmp_path), "--snakeviz", "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert "dynaprof run --cprofile" in err and len(err.strip().splitlines()) == 1


def test_serves_report_on_loopback_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    (tmp_path / "report.html").write_text("<html><body>hello report</body></html>")
    proc, url = start_view(str(tmp_path))
    try:
        assert url.endswith("/report.html")
        with urllib.request.urlopen(url, timeout=120) as r:
            assert r.status == 200 and b"hello report" in r.read()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=180) == 0
    assert not answers(port_of(url))


@pytest.mark.skipif(importlib.util.find_spec("snakeviz") is None, reason="snakeviz not installed")
def test_snakeviz_answers_and_is_stopped(tmp_path: Path) -> None:
    write_prof.save_table(dynamo_like(), tmp_path / "cprofile" / "run.prof")
    proc, url = start_view(str(tmp_path), "--snakeviz")
    port = port_of(url)
    try:
        assert "/snakeviz/" in url and "run.snakeviz.prof" in url
        with urllib.request.urlopen(url, timeout=120) as r:
            body = r.read()
            assert r.status == 200 and b"sv-error-div" in body and b"_compile" in body
        assert (tmp_path / "cprofile" / "run.prof").exists()  # the original stays
        root = pt.snakeviz_root(load_table(tmp_path / "cprofile" / "run.snakeviz.prof"))
        assert root is not None and root[2] == "_compile"
    finally:
        proc.terminate()
        assert proc.wait(timeout=180) == 0
    assert not answers(port)  # snakeviz went with it


# --- real torch + real Chromium -------------------------------------------------------------------

SEED_PROFILE = textwrap.dedent("""
    import cProfile, sys
    sys.path.insert(0, {samples!r})
    import torch
    import parametrized_linear as pl
    m = pl.Module(32, 128)
    pl.parametrize(m)
    x = torch.randn([1, 128], dtype=torch.half)
    m(x)
    m.compile(backend="eager")
    prof = cProfile.Profile()
    prof.enable()
    m(x)  # the first call compiles: the compile window
    prof.disable()
    prof.dump_stats({out!r})
""")


def _browser_missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (set DYNAPROF_CHROMIUM)"
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed"
    return None


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    run = tmp_path_factory.mktemp("seed_run")
    (run / "cprofile").mkdir()
    script = SEED_PROFILE.format(samples=str(ROOT / "samples"), out=str(run / "cprofile" / "run.prof"))
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300, capture_output=True)
    yield run


CHART_STATE = """() => {
  const err = document.querySelector('#sv-error-div');
  if (err && getComputedStyle(err).display !== 'none') return 'error';
  const spin = document.querySelector('#working-spinner');
  if (spin && getComputedStyle(spin).display !== 'none') return false;
  const n = document.querySelectorAll('#chart svg path, #chart svg rect').length;
  return n > 0 ? n : false;
}"""


@pytest.mark.browser
@pytest.mark.torch
@pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))
def test_snakeviz_draws_reshaped_seed_profile_in_chromium(seed_run: Path) -> None:
    proc, url = start_view(str(seed_run), "--snakeviz")
    try:
        with playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1200})
                page.goto(url, timeout=60_000)
                # snakeviz's defaults: depth 10, cutoff 1/1000; wait for the icicle, not just the page
                default = page.wait_for_function(CHART_STATE, timeout=60_000, polling=200).json_value()
                assert default != "error", "snakeviz: 'An error occurred processing your profile'"
                assert "_compile" in page.locator("#chart").inner_text()
                page.select_option("#sv-depth-select", "20")
                page.wait_for_timeout(300)
                deep = page.wait_for_function(CHART_STATE, timeout=60_000, polling=200).json_value()
                assert deep != "error", "snakeviz failed at depth 20"
                assert int(deep) > int(default)
                assert not page.locator("#sv-error-div").is_visible()
            finally:
                browser.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=180) == 0
