"""Reading cProfile ``.prof`` files (pstats' marshal format) into tables (``analysis.pstats_tools``
describes the table's shape)."""

from __future__ import annotations

import pstats
from pathlib import Path

from dynaprof.errors import DynaprofError
from dynaprof.model.pstats_table import PStatsTable


def load_table(path: str | Path) -> PStatsTable:
    """Read a ``.prof`` (cProfile/pstats marshal format); DynaprofError naming the file if it is
    missing or corrupt."""
    p = Path(path)
    try:
        stats = pstats.Stats(str(p))
    except FileNotFoundError:
        raise DynaprofError(f"{p}: no such cProfile file") from None
    except OSError as e:
        raise DynaprofError(f"{p}: cannot read cProfile data: {e.strerror or e}") from None
    except (EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        raise DynaprofError(f"{p}: corrupt cProfile data (not a pstats/.prof file): {type(e).__name__}") from None
    table: PStatsTable = {}
    for key, value in stats.stats.items():  # type: ignore[attr-defined]
        if not _valid_key(key) or not isinstance(value, tuple) or len(value) != 5 or not isinstance(value[4], dict):
            raise DynaprofError(f"{p}: corrupt cProfile data (unexpected entry {key!r})")
        table[key] = (*value[:4], dict(value[4]))
    return table


def _valid_key(key: object) -> bool:
    return (
        isinstance(key, tuple)
        and len(key) == 3
        and isinstance(key[0], str)
        and isinstance(key[1], int)
        and isinstance(key[2], str)
    )


def total_calls(path: str | Path) -> int | None:
    """Every function call a ``.prof`` counted (pstats' ``total_calls``: recursive calls too); None
    when the file cannot be read (the session then says unknown, and the report names the file)."""
    try:
        table = load_table(path)
    except DynaprofError:
        return None
    return sum(int(v[1]) for v in table.values())
