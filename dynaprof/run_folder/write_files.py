"""Writing rendered files into a folder (the writer's, and the other commands' pages: compare,
ranks, pr): kept apart from ``writer`` so that importing it imports no renderer."""

from __future__ import annotations

from pathlib import Path

from dynaprof.model.store import atomic_write
from dynaprof.render.base import Deferred, Files


def write_files(out_dir: Path, files: Files) -> list[Path]:
    """Write renderer outputs atomically under ``out_dir``; returns the paths written."""
    written = []
    for rel, content in files.items():
        path = out_dir / rel
        atomic_write(path, content.result() if isinstance(content, Deferred) else content)
        written.append(path)
    return written
