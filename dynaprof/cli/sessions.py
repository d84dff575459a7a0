"""Where the CLI gets a session from a path: a run folder or its session.json, a run folder with
only a capture journal (rebuilt by ``dynaprof.pipeline``), or a TORCH_TRACE log (imported).

Shared by ``report`` and the multi-rank report (``ranks_support``); derived data (attribution) is
applied when the session is written (``dynaprof.pipeline.write``), not here.
"""

from __future__ import annotations

from pathlib import Path

from dynaprof.errors import DynaprofError
from dynaprof.model.journal import JOURNAL_FILE
from dynaprof.model.session import Session
from dynaprof.model.store import SESSION_FILE, load_session
from dynaprof.pipeline import info, rebuild_from_journal


def _is_trace(path: Path) -> bool:
    from dynaprof.ingest.torch_trace import is_torch_trace

    return bool(is_torch_trace(path))


def load_any(path: Path, strict: bool = False, rank: int | None = None) -> tuple[Session, Path, bool]:
    """(session, the folder its side files live in, whether it came from a TORCH_TRACE log)."""
    if not path.exists():
        raise DynaprofError(f"{path}: no such file or folder")
    if path.is_dir() and (path / SESSION_FILE).exists():
        return load_session(path), path, False
    if path.is_file() and path.name == SESSION_FILE:
        return load_session(path), path.parent, False
    if path.is_dir() and (path / JOURNAL_FILE).exists():
        info(f"dynaprof: {path} has no session.json; rebuilding it from the capture journal")
        return rebuild_from_journal(path), path, False
    if _is_trace(path):
        from dynaprof.ingest.trace_to_session import import_torch_trace

        return import_torch_trace(path, strict=strict, rank=rank), path if path.is_dir() else path.parent, True
    if path.is_file() and path.suffix == ".json":
        return load_session(path), path.parent, False
    raise DynaprofError(f"{path}: not a dynaprof run folder, session.json or TORCH_TRACE log")
