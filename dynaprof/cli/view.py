"""``dynaprof view RUN``: serve a run's report over loopback HTTP, or open its cProfile data in
snakeviz (``--snakeviz``), until Ctrl-C."""

from __future__ import annotations

import argparse
import functools
import importlib.util
import signal
import socket
import subprocess
import sys
import tempfile
import time
import webbrowser
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from dynaprof.analysis.pstats_tools import RUN_SNAKEVIZ_PROFILE, snakeviz_path
from dynaprof.cli.common import display_path
from dynaprof.errors import DynaprofError
from dynaprof.model.store import SESSION_FILE, load_session
from dynaprof.pipeline import info
from dynaprof.run_folder.write_prof import write_snakeviz_profile

NO_CPROFILE = "has no cProfile data; record it with: dynaprof run --cprofile SCRIPT"
SNAKEVIZ_START_TIMEOUT_S = 30.0


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the server like Ctrl-C does (so a child is never left behind)."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _open_browser(url: str, no_browser: bool) -> None:
    if not no_browser:
        try:
            webbrowser.open(url)
        except Exception:  # a missing or broken browser must not stop the server
            info("dynaprof: could not open a browser; open the URL above yourself")


def serve_folder(run_dir: Path, host: str, port: int, no_browser: bool) -> int:
    # imported here: http.server costs every other command's start-up ~10 ms
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class _QuietHandler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(_QuietHandler, directory=str(run_dir))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_cls = type("_Server", (ThreadingHTTPServer,), {"address_family": family, "daemon_threads": True})
    try:
        server = server_cls((host, port), handler)
    except OSError as e:
        raise DynaprofError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    page = "report.html" if (run_dir / "report.html").is_file() else ""
    url = f"http://{_url_host(host)}:{server.server_address[1]}/{page}"
    print(url, flush=True)
    if not page:
        info(f"dynaprof: {display_path(run_dir)} has no report.html; serving the folder")
    info("dynaprof: serving on loopback; press Ctrl-C to stop")
    _open_browser(url, no_browser)
    try:
        with _sigterm_as_interrupt():
            server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    info("dynaprof: stopped")
    return 0


def _cprofile_sources(run: Path) -> list[Path]:
    """The run's cProfile files: the merged one when there is one, else every per-frame file."""
    if run.is_file():
        return [run]
    cands: list[Path] = []
    if (run / SESSION_FILE).is_file():
        session = load_session(run)
        merged = session.artifacts.get("cprofile")
        if merged and (run / merged).is_file():
            return [run / merged]
        cands = [run / f.cprofile for f in session.frames if f.cprofile and (run / f.cprofile).is_file()]
    folder = run / "cprofile"
    if not cands and (folder / "run.prof").is_file():
        return [folder / "run.prof"]
    if not cands and folder.is_dir():
        cands = sorted(p for p in folder.glob("*.prof") if not p.name.endswith(".snakeviz.prof"))
    return cands


def snakeviz_profile(run: Path) -> Path:
    """The run's snakeviz-ready profile, made (or remade, when older than its sources) from its
    cProfile data; DynaprofError when there is none."""
    sources = _cprofile_sources(run)
    if not sources:
        raise DynaprofError(f"{display_path(run)} {NO_CPROFILE}")
    dest = snakeviz_path(run) if run.is_file() else run / RUN_SNAKEVIZ_PROFILE
    newest = max(p.stat().st_mtime for p in sources)
    if dest.is_file() and dest.stat().st_mtime >= newest:
        return dest
    return write_snakeviz_profile(sources, dest, name=display_path(sources[0]))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_snakeviz(run: Path, host: str, port: int, no_browser: bool) -> int:
    if importlib.util.find_spec("snakeviz") is None:
        raise DynaprofError("snakeviz is not installed: pip install snakeviz")
    prof = snakeviz_profile(run)
    if port == 0:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="dynaprof-snakeviz-") as tmp:
        log = Path(tmp) / "snakeviz.log"
        with open(log, "wb") as out:
            cmd = [sys.executable, "-m", "snakeviz", "--server", "-H", host, "-p", str(port), str(prof.resolve())]
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            with _sigterm_as_interrupt():
                url = _wait_for_url(proc, log, host, prof)
                print(url, flush=True)
                info(f"dynaprof: snakeviz is showing {display_path(prof)}; press Ctrl-C to stop")
                info(
                    "dynaprof: Depth 10 (snakeviz's default) shows the compile entry; pick Depth 20 or click "
                    "symbolic_convert.py(run) to see tracing"
                )
                _open_browser(url, no_browser)
                code = proc.wait()
            if code != 0:
                raise DynaprofError(f"snakeviz exited with status {code}: {_last_line(log)}")
        except KeyboardInterrupt:
            pass
        finally:
            _stop(proc)
    info("dynaprof: stopped")
    return 0


def _last_line(log: Path) -> str:
    lines = [ln for ln in _read(log).splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def _wait_for_url(proc: subprocess.Popen[bytes], log: Path, host: str, prof: Path) -> str:
    """Wait until snakeviz listens; its URL (snakeviz may pick another port when ours is taken)."""
    deadline = time.monotonic() + SNAKEVIZ_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DynaprofError(f"snakeviz exited with status {proc.returncode}: {_last_line(log)}")
        for line in _read(log).splitlines():
            if line.startswith("http://") and "/snakeviz/" in line:
                port = int(line.split("/")[2].rsplit(":", 1)[1])
                try:
                    socket.create_connection((host, port), timeout=0.5).close()
                except OSError:
                    break
                return f"http://{_url_host(host)}:{port}/snakeviz/{quote(str(prof.resolve()), safe='')}"
        time.sleep(0.1)
    _stop(proc)
    raise DynaprofError(f"snakeviz did not start within {SNAKEVIZ_START_TIMEOUT_S:.0f} s: {_last_line(log)}")


class ViewCommand:
    name = "view"
    help = "open a run's report (or its cProfile data in snakeviz) in a browser"
    description = (
        "Serve a run folder's report.html over HTTP on loopback and print its URL; with --snakeviz, "
        "open the run's cProfile data (dynaprof run --cprofile) in snakeviz instead, reshaped so that "
        "snakeviz can draw Dynamo's recursion. Stop with Ctrl-C."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("run", metavar="RUN", help="run folder (or, with --snakeviz, a .prof file)")
        parser.add_argument("--snakeviz", action="store_true", help="open the cProfile data in snakeviz")
        parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
        parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
        parser.add_argument("--no-browser", action="store_true", help="only print the URL")

    def run(self, args: argparse.Namespace) -> int:
        run = Path(args.run)
        if not 0 <= args.port <= 65535:
            raise DynaprofError(f"--port must be in 0..65535, got {args.port}")
        if not run.exists():
            raise DynaprofError(f"{run}: no such run folder")
        if args.snakeviz:
            return run_snakeviz(run, args.host, args.port, args.no_browser)
        if not run.is_dir():
            raise DynaprofError(f"{run} is not a run folder")
        return serve_folder(run, args.host, args.port, args.no_browser)


COMMAND = ViewCommand()
