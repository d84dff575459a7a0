"""What subcommands share: the Command protocol, loading inputs, writing outputs."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Protocol

from dynaprof.pipeline import info
from dynaprof.run_folder.write_files import write_files as write_files  # re-exported: the pages' commands write with it


class Command(Protocol):
    name: str
    help: str
    description: str

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def display_path(path: Path) -> str:
    """A path as short as it can be while still working from the current folder."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


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
