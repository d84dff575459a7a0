"""Writing cProfile ``.prof`` files: a table as ``cProfile.Profile.dump_stats`` writes it, and
the snakeviz-ready copy of a run's profile."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dynaprof.analysis.pstats_tools import (
    merge_tables,
    reshape_for_snakeviz,
    snakeviz_bytes,
    snakeviz_path,
    table_bytes,
)
from dynaprof.errors import DynaprofError
from dynaprof.ingest.prof_files import load_table
from dynaprof.model.pstats_table import PStatsTable
from dynaprof.model.store import atomic_write


def save_table(table: PStatsTable, path: str | Path) -> Path:
    """Write ``table`` as a ``.prof`` file (atomically)."""
    p = Path(path)
    atomic_write(p, table_bytes(table))
    return p


def write_snakeviz_profile(
    prof: str | Path | Sequence[Path], out: str | Path | None = None, name: str | None = None
) -> Path:
    """Reshape ``prof`` (one ``.prof`` file, or several merged) for snakeviz and save it to ``out``
    (default: next to the first, ``run.snakeviz.prof``); the originals are kept. ``name``: how
    the data is named in the error for an empty profile."""
    sources = [Path(prof)] if isinstance(prof, str | Path) else [Path(p) for p in prof]
    dest = Path(out) if out is not None else snakeviz_path(sources[0])
    table = load_table(sources[0]) if isinstance(prof, str | Path) else merge_tables(load_table(p) for p in sources)
    if not reshape_for_snakeviz(table):
        raise DynaprofError(f"{name or sources[0]}: the cProfile data is empty")
    atomic_write(dest, snakeviz_bytes(table))
    return dest
