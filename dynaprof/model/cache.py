"""Per-compile cache markers: FX graph cache and AOTAutograd cache hits, misses and bypasses (the
counts; ``analysis.cache_summary`` words them).

Pure, and one implementation for both ways a session is built (``ingest.assemble`` for a live
run, ``ingest.trace_to_session`` for a TORCH_TRACE log). Torch marks each cache lookup twice: a
chromium *instant* event (``fx_graph_cache_hit``, ``autograd_cache_miss``, ...), which the live
capture journals as a ``span`` record with ``ph == "i"``, and, in a TORCH_TRACE log, an
``artifact`` record of the same outcome (``fx_graph_cache_hit``, ``aotautograd_cache_bypass``, ...:
what tlparse lists per compile). A compile's artifacts are counted when it has any (some torch
versions log an AOTAutograd miss only as an instant event: then, as in tlparse, it is not counted),
else its instant events (never both: they mark the same lookups), else CompilationMetrics' counters
(``inductor_fx_local_cache_hit_count``, ``aotautograd_remote_cache_miss_count``, ...).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from dynaprof.fmt import stored_s
from dynaprof.model.cache_keys import BY_NAME, COUNTED, MARKER_PREFIXES
from dynaprof.model.session import CacheStats, CompiledFrame

#: cache name -> what the summary calls it, for the caches counted per compile (``model.cache_keys.CACHES``)
CACHE_LABELS: dict[str, str] = COUNTED
OUTCOMES = ("hit", "miss", "bypass")


def marker(name: str) -> tuple[str, str] | None:
    """``(cache, outcome)`` of a marker name (``fx_graph_cache_hit`` -> ``("fx_graph", "hit")``), else None."""
    for prefix, cache in MARKER_PREFIXES.items():
        if name.startswith(prefix):
            outcome = name[len(prefix) :]
            return (cache, outcome) if outcome in OUTCOMES else None
    return None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300 else None


class CacheTally:
    """Collects one compile's markers while a session is built; ``result()`` gives the
    ``CompiledFrame.cache`` value."""

    __slots__ = ("artifacts", "events", "saved_s")

    def __init__(self) -> None:
        self.artifacts: Counter[tuple[str, str]] = Counter()
        self.events: Counter[tuple[str, str]] = Counter()
        self.saved_s: dict[str, float] = {}

    def artifact(self, name: str) -> bool:
        """A TORCH_TRACE ``artifact`` record named ``name``; True when it was a cache marker."""
        m = marker(name)
        if m is not None:
            self.artifacts[m] += 1
        return m is not None

    def event(self, name: str, args: Mapping[str, Any] | None = None) -> bool:
        """A chromium instant event (``ph == "i"``); its ``time_saved_ns`` (hits) is kept."""
        m = marker(name)
        if m is None:
            return False
        self.events[m] += 1
        saved = _num((args or {}).get("time_saved_ns"))
        if m[1] == "hit" and saved is not None and saved >= 0:
            self.saved_s[m[0]] = self.saved_s.get(m[0], 0.0) + saved / 1e9
        return True

    def result(self, metrics: Mapping[str, Any] | None = None) -> dict[str, CacheStats]:
        out: dict[str, CacheStats] = {}
        source = self.artifacts or self.events  # one or the other: they mark the same lookups
        for cache in CACHE_LABELS:
            counts = {o: source[(cache, o)] for o in OUTCOMES if source[(cache, o)]}
            if not counts and metrics:  # CompilationMetrics' counters, the fallback
                for o, fields in BY_NAME[cache].counters.items():
                    n = sum(v for f in fields if isinstance(v := metrics.get(f), int) and not isinstance(v, bool))
                    if n > 0:
                        counts[o] = n
            if counts:
                saved = self.saved_s.get(cache)
                out[cache] = CacheStats(
                    hits=counts.get("hit", 0), misses=counts.get("miss", 0), bypasses=counts.get("bypass", 0),
                    time_saved_s=stored_s(saved) if saved is not None else None,
                )  # fmt: skip
        return out


def cache_totals(frames: list[CompiledFrame]) -> dict[str, CacheStats]:
    """Every frame's ``cache`` summed per cache (time saved: summed where known)."""
    out: dict[str, CacheStats] = {}
    for f in frames:
        for cache, c in f.cache.items():
            t = out.setdefault(cache, CacheStats())
            t.hits += c.hits
            t.misses += c.misses
            t.bypasses += c.bypasses
            if c.time_saved_s is not None:
                t.time_saved_s = (t.time_saved_s or 0.0) + c.time_saved_s
    order = list(CACHE_LABELS)
    return dict(sorted(out.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0])))
