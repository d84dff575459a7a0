"""The shape of cProfile statistics as dynaprof holds them (``analysis.pstats_tools`` explains it)."""

from __future__ import annotations

from typing import Any

#: ``(file, line, function)``, pstats' key of a function
FuncKey = tuple[str, int, str]
#: pstats' raw table (``pstats.Stats(...).stats``): key -> (primitive calls, calls, tottime,
#: cumtime, callers)
PStatsTable = dict[FuncKey, tuple[Any, ...]]
