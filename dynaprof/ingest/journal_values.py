"""Values of journal records as the session holds them (the assembler's small readers)."""

from __future__ import annotations

from typing import Any

from dynaprof.ingest.torch_metrics import num, opt_num, req_int
from dynaprof.model.journal import Prop
from dynaprof.model.session import Location, PropertyTrace


def add_count(have: int | None, value: object) -> int | None:
    """A frame's exact count plus one graph's: one graph of unknown size makes the sum unknown."""
    if have is None or not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    return have + value


def or_default(value: int | None, default: int | None) -> int | None:
    """A record's value where it has one, else what the frame had."""
    return value if value is not None else default


def rates_pair(x: Any) -> list[float]:
    """A sampler record's ``adapted_hz``: [lowest, last] rates, both positive; else none."""
    rates = [opt_num(v) for v in x] if isinstance(x, list) and len(x) == 2 else []
    good = [r for r in rates if r is not None and r > 0]
    return good if len(good) == 2 else []


def non_negative(x: Any) -> float | None:
    """A number that cannot be below zero (seconds measured); None where it is absent or negative."""
    v = opt_num(x)
    return v if v is not None and v >= 0 else None


def location(x: Any) -> Location | None:
    """A ``[name, file, line]`` triple, or None where it is not one."""
    if isinstance(x, list) and len(x) == 3 and isinstance(x[0], str) and isinstance(x[1], str) and type(x[2]) is int:
        return Location(x[0], x[1], x[2])
    return None


def property_trace(p: Prop) -> PropertyTrace:
    """One traced property of a ``compile_end`` record."""
    return PropertyTrace(
        str(p["label"]),
        str(p["owner"]),
        str(p["name"]),
        str(p["getter_file"]),
        req_int(p["getter_line"]),
        bool(p["parametrized"]),
        req_int(p["count"]),
        req_int(p["instances"]),
        num(p["seconds"]),
    )
