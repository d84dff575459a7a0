"""What subcommands share: the Command protocol, loading inputs, writing outputs."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path
from typing import Protocol

from dynaprof.errors import DynaprofError
from dynaprof.run_folder.write_files import write_files as write_files  # re-exported: the pages' commands write with it

#: where ``run``, an imported TORCH_TRACE log and ``dynaprof.profile()`` put a run folder by default
RUNS_DIR = "dynaprof-runs"


def default_run_dir(stem: str) -> Path:
    """./dynaprof-runs/<script>-<timestamp>, made unique with a counter."""
    base = Path(RUNS_DIR) / f"{stem}-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


class Command(Protocol):
    name: str
    help: str
    description: str

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def prepare_out_dir(
    path: Path, force: bool, hint: str = "--force", error: type[DynaprofError] = DynaprofError
) -> Path:
    """Create ``path``; refuse a non-empty existing folder unless ``force``. ``hint`` names the
    option that overrides it; ``error`` is what is raised (the API raises its own subclass)."""
    if path.exists() and not path.is_dir():
        raise error(f"{path} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise error(f"{path} is not empty; pass {hint} to write into it anyway")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise error(f"cannot create {path}: {e.strerror or e}") from e
    return path


def display_path(path: Path) -> str:
    """A path as short as it can be while still working from the current folder."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def info(message: str) -> None:
    """Progress and results go to stderr, so the profiled script owns stdout."""
    print(message, file=sys.stderr, flush=True)


#: the summary is never wider than this, however wide the terminal
MAX_WIDTH = 120


def summary_width() -> int:
    """Columns for the summary on stderr: ``COLUMNS`` when set, else stderr's terminal width, else
    100 (a pipe, a CI log), at most ``MAX_WIDTH``."""
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return min(MAX_WIDTH, int(env))
    try:
        return min(MAX_WIDTH, os.get_terminal_size(sys.stderr.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        return 100


def info_next_steps(page: Path | None, out_dir: Path) -> None:
    """"open PAGE in a browser; re-render with: dynaprof report DIR" (without ``page``, the
    second half only), one path a line where both do not fit the width."""
    again = f"re-render with: dynaprof report {display_path(out_dir)}"
    if page is None:
        info(f"  {again}")
        return
    opened = f"open {display_path(page)} in a browser"
    if 4 + len(opened) + len(again) > summary_width():
        info(f"  {opened}")
        info(f"  {again}")
    else:
        info(f"  {opened}; {again}")
