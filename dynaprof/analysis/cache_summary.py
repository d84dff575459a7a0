"""The cache counts in words, one wording for every place that shows them: the summaries' cache
line (``cache_line``) and the rank-by-rank comparison of each compile's cache outcome
(``analysis.rank_desync``, which compares ``counts_text``)."""

from __future__ import annotations

from collections.abc import Mapping

from dynaprof import fmt
from dynaprof.model.cache import CACHE_LABELS
from dynaprof.model.session import CacheStats

#: what ``cache_line`` adds when any lookup hit
WARM_WARNING = "times do not compare with a cold run"


def _plural(n: int, one: str, many: str) -> str:
    """``fmt.plural``, or nothing for none (a cache's outcomes that did not happen are left out)."""
    return "" if n == 0 else fmt.plural(n, one, many)


def counts_text(totals: Mapping[str, CacheStats]) -> str | None:
    """``FX graph cache: 3 hits, 1 miss (saved 0.20 s); AOTAutograd cache: 2 bypasses``; None
    when no compile looked up a cache."""
    parts: list[str] = []
    for cache, c in totals.items():
        bits = [_plural(c.hits, "hit", "hits"), _plural(c.misses, "miss", "misses"),
                _plural(c.bypasses, "bypass", "bypasses")]  # fmt: skip
        saved = f" (saved {c.time_saved_s:.2f} s)" if c.time_saved_s else ""
        parts.append(f"{CACHE_LABELS.get(cache, cache)}: {', '.join(b for b in bits if b)}{saved}")
    return "; ".join(parts) if parts else None


def cache_line(totals: Mapping[str, CacheStats]) -> str | None:
    """``counts_text`` plus, when anything hit, the warning that times do not compare with a cold
    run; None when no compile looked up a cache."""
    text = counts_text(totals)
    if text is None:
        return None
    return text + (f": {WARM_WARNING}" if any(c.hits for c in totals.values()) else "")
