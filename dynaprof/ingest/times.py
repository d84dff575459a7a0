"""The run's start as text, one format for the journal and the TORCH_TRACE import."""

from __future__ import annotations

import datetime


def iso_utc(epoch_s: float) -> str | None:
    """An epoch time as ISO 8601 in UTC, to the millisecond (``2026-12-02T00:49:17.123+00:00``);
    None where it is no time a clock can show (out of range, NaN)."""
    try:
        stamp = datetime.datetime.fromtimestamp(epoch_s, tz=datetime.timezone.utc)
    except (OverflowError, ValueError, OSError):
        return None
    return stamp.isoformat(timespec="milliseconds")
