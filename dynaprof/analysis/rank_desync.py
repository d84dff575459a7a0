"""Desync diagnostics between ranks, beyond ``analysis.ranks``: what tlparse's multi-rank view
checks. Matched compiles (same code location, same occurrence) that differ between ranks in

* ``compile_ids``: the compile id (the ranks compiled frames in a different order or number);
* ``cache``: the FX graph / AOTAutograd cache hits, misses and bypasses (one rank compiled cold
  while the others loaded from the cache: its compile times are not comparable, and it is late);
* ``collectives``: the collectives Inductor scheduled in the graph, in order (where the log has
  ``inductor_collective_schedule``): different sequences hang at the first collective that differs.

Pure: sessions in, ``Divergence`` records out (the same records ``merge_ranks`` makes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from dynaprof import fmt
from dynaprof.analysis.cache_summary import counts_text
from dynaprof.analysis.compare import FrameKey, frame_key
from dynaprof.analysis.ranks import Divergence, RankSummary, Value, _by_value, headline, odd_ones
from dynaprof.model.session import CompiledFrame, Session

#: divergence kinds added here, in the order they are listed (after ``analysis.ranks.KINDS``)
DESYNC_KINDS: dict[str, str] = {
    "collectives": "different collective schedules (a hang at the first collective that differs)",
    "compile_ids": "the same compile under different compile ids",
    "cache": "different cache hits/misses (cold on some ranks, warm on others)",
}


def _collectives(f: CompiledFrame) -> Value:
    if f.collectives is None:
        return None
    return " -> ".join(c.removeprefix("torch.ops.").removeprefix("_c10d_functional.").removesuffix(".default")
                       for c in f.collectives) or "(none)"  # fmt: skip


def _cache(f: CompiledFrame) -> Value:
    return counts_text(f.cache) or "no cache lookup"


def _grouped(s: Session) -> dict[FrameKey, list[CompiledFrame]]:
    out: dict[FrameKey, list[CompiledFrame]] = {}
    for f in sorted(s.frames, key=lambda f: f.start_s):
        out.setdefault(frame_key(f), []).append(f)
    return out


def desync_divergences(sessions: Mapping[int, Session]) -> list[Divergence]:
    """Matched compiles whose compile id, cache outcome or collective schedule differs between
    ranks. A rank whose log holds no cache markers (or no collective schedule) at all is unknown
    there, never a difference."""
    ranks = sorted(sessions)
    if len(ranks) < 2:
        return []
    has_cache = {r for r in ranks if any(f.cache for f in sessions[r].frames)}
    checks: dict[str, tuple[Callable[[CompiledFrame], Value], Callable[[Value], str], set[int]]] = {
        "collectives": (_collectives, lambda v: f"[{v}]", set(ranks)),
        "compile_ids": (lambda f: f.compile_id, lambda v: f"compile id {v}", set(ranks)),
        "cache": (_cache, lambda v: str(v), has_cache),
    }
    groups = {r: _grouped(sessions[r]) for r in ranks}
    out: list[Divergence] = []
    for key in sorted({k for g in groups.values() for k in g}):
        per_rank = {r: groups[r].get(key, []) for r in ranks}
        where = f"{fmt.one_line(key[1], 80)} ({key[0]}:{key[2]})"
        common = min(len(fs) for fs in per_rank.values())
        total = max(len(fs) for fs in per_rank.values())
        for occ in range(common):
            frames = {r: per_rank[r][occ] for r in ranks}
            label = where if total == 1 else f"{where}, compile {occ + 1}"
            for kind, (get, show, known) in checks.items():
                values: dict[int, Value] = {r: v for r, f in frames.items() if r in known and (v := get(f)) is not None}
                odd = odd_ones(values)
                if odd:
                    out.append(Divergence(kind, key[1], key[0], key[2], occ, values, odd,
                                          {r: f.compile_id for r, f in frames.items()},
                                          f"{label}: " + _by_value(values, show, odd),
                                          min(f.start_s for f in frames.values())))  # fmt: skip
    order = list(DESYNC_KINDS)
    out.sort(key=lambda d: (order.index(d.kind), d.start_s, d.filename, d.name, d.lineno, d.occurrence or 0))
    return out


def add_desync(summary: RankSummary, sessions: Mapping[int, Session]) -> RankSummary:
    """``summary`` (from ``merge_ranks``) with the desync divergences appended and its headline redone."""
    extra = desync_divergences(sessions)
    if extra:
        summary.divergences = [*summary.divergences, *extra]
        summary.headline = headline(summary)
    return summary
