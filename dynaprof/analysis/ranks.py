"""Multi-rank jobs seen from analysis: their sessions merged, per-rank totals, the slowest rank, divergences.

Frames are matched across ranks as ``dynaprof compare`` matches two runs: by code location
(``compare.frame_key``: file basename, function name, first line) and, among the compiles at one
location, by order of occurrence. A *divergence* is a compile that some ranks did and others
did not, a location compiled a different number of times (recompiles), or the same compile with
a different outcome, graph-break count, guard count or graph size. Ranks that compile different
graphs run different collectives: the classic cause of a distributed job that hangs (or times
out) in NCCL/gloo. Each divergence names the ranks that differ: the ranks outside the largest
group of agreeing ranks (on a tie, the group holding the lowest rank is the reference).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from dynaprof import fmt
from dynaprof.analysis.compare import FrameKey, frame_key
from dynaprof.model.session import CompiledFrame, Session

#: divergence kinds, most serious first (the order they are listed in)
KINDS: dict[str, str] = {
    "missing": "compiled on some ranks only",
    "recompiles": "compiled a different number of times",
    "status": "failed on some ranks",
    "graph_breaks": "different graph breaks",
    "graph_ops": "different graph sizes",
    "guards": "different guard counts",
}

Value = int | str | None


@dataclass
class RankTotals:
    rank: int
    frames: int
    compile_s: float
    restarts: int
    graph_breaks: int | None  # None: a frame's count is unknown (an imported torch 2.4 log)
    guards: int | None  # None: no frame had a known guard count
    recompiles: int  # compiles of a code location this rank had compiled before
    failed: int
    exit_status: int | None
    end_reason: str
    complete: bool
    wall_s: float | None
    hostname: str


@dataclass
class Divergence:
    kind: str  # a key of KINDS
    name: str
    filename: str  # basename, as matched
    lineno: int
    occurrence: int | None  # which compile at this location (0: the first); None: the location as a whole
    values: dict[int, Value]  # rank -> compiles here (missing/recompiles) or the differing value
    ranks: list[int]  # the ranks that differ from the reference group
    compile_ids: dict[int, str]  # rank -> the compile id there (first one at the location)
    message: str
    start_s: float  # earliest start among the ranks, for ordering


@dataclass
class RankSummary:
    world_size: int
    target: str
    ranks: list[RankTotals]
    missing_ranks: list[int] = field(default_factory=list)  # ranks with no session
    slowest: int | None = None  # most compile time
    fastest: int | None = None
    spread_s: float = 0.0  # slowest minus fastest compile time
    divergences: list[Divergence] = field(default_factory=list)
    headline: str = ""

    def totals(self, rank: int) -> RankTotals | None:
        return next((t for t in self.ranks if t.rank == rank), None)


# ---------------------------------------------------------------------------------------------
# helpers


def rank_list(ranks: list[int]) -> str:
    """``rank 1``, ``ranks 0, 2-5``: consecutive ranks as ranges."""
    rs = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(str(rs[i]) if j == i else f"{rs[i]}-{rs[j]}" if j > i + 1 else f"{rs[i]}, {rs[j]}")
        i = j + 1
    return ("rank " if len(rs) == 1 else "ranks ") + ", ".join(parts)


def odd_ones(values: Mapping[int, Hashable]) -> list[int]:
    """Ranks outside the largest group with one value (ties: the group with the lowest rank wins)."""
    groups: dict[Hashable, list[int]] = {}
    for r in sorted(values):
        groups.setdefault(values[r], []).append(r)
    if len(groups) < 2:
        return []
    reference = max(groups.values(), key=lambda rs: (len(rs), -min(rs)))
    return sorted(r for r in values if r not in reference)


def _grouped(s: Session) -> dict[FrameKey, list[CompiledFrame]]:
    out: dict[FrameKey, list[CompiledFrame]] = {}
    for f in sorted(s.frames, key=lambda f: f.start_s):  # stable: ties keep session order
        out.setdefault(frame_key(f), []).append(f)
    return out


def rank_totals(rank: int, s: Session) -> RankTotals:
    frames = s.frames
    guards = [f.guard_count for f in frames if f.guard_count is not None]
    return RankTotals(
        rank=rank, frames=len(frames), compile_s=s.total_compile_s, restarts=sum(f.restarts for f in frames),
        graph_breaks=s.graph_breaks, guards=sum(guards) if guards else None,
        recompiles=len(fw := [f for f in frames if f.kind != "backward"]) - len({frame_key(f) for f in fw}),
        failed=sum(1 for f in frames if f.status == "failed"), exit_status=s.run.exit_status,
        end_reason=s.run.end_reason, complete=s.run.complete, wall_s=s.run.wall_s, hostname=s.run.hostname,
    )


def _times(n: int) -> str:
    return "never" if n == 0 else "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _by_value(values: Mapping[int, Value], show: Callable[[Value], str], odd: list[int]) -> str:
    """``135 on rank 1; 120 on ranks 0, 2-3``: the odd values first, then the reference."""
    groups: dict[Value, list[int]] = {}
    for r in sorted(values):
        groups.setdefault(values[r], []).append(r)
    ordered = sorted(groups.items(), key=lambda kv: (not set(kv[1]) & set(odd), min(kv[1])))
    return "; ".join(f"{show(v)} on {rank_list(rs)}" for v, rs in ordered)


_CHECKS: dict[str, tuple[Callable[[CompiledFrame], Value], Callable[[Value], str]]] = {
    "status": (lambda f: f.status, lambda v: str(v)),
    "graph_breaks": (lambda f: f.graph_breaks, lambda v: fmt.plural(v if isinstance(v, int) else None, "graph break")),
    "graph_ops": (lambda f: f.graph_op_count, lambda v: f"{v} graph ops"),
    "guards": (lambda f: f.guard_count, lambda v: f"{fmt.count(v if isinstance(v, int) else None)} guards"),
}


# ---------------------------------------------------------------------------------------------
# merging


def divergences(sessions: Mapping[int, Session]) -> list[Divergence]:
    """Every compile that differs between ranks, most serious kind first, then in compile order."""
    ranks = sorted(sessions)
    if len(ranks) < 2:
        return []
    groups = {r: _grouped(sessions[r]) for r in ranks}
    keys = {k for g in groups.values() for k in g}
    out: list[Divergence] = []
    for key in keys:
        per_rank = {r: groups[r].get(key, []) for r in ranks}
        where = f"{fmt.one_line(key[1], 80)} ({key[0]}:{key[2]})"
        first = {r: fs[0].compile_id for r, fs in per_rank.items() if fs}
        start = min(fs[0].start_s for fs in per_rank.values() if fs)
        counts: dict[int, Value] = {r: len(fs) for r, fs in per_rank.items()}
        odd = odd_ones(counts)
        if odd:
            has = [r for r in ranks if counts[r]]
            lacks = [r for r in ranks if not counts[r]]
            if lacks:
                msg = (f"{where} compiled only on {rank_list(has)}, not on {rank_list(lacks)}" if set(odd) <= set(has)
                       else f"{where} not compiled on {rank_list(lacks)} (compiled on {rank_list(has)})")
                kind = "missing"
            else:
                msg = f"{where} compiled " + _by_value(counts, lambda v: _times(int(v or 0)), odd)
                kind = "recompiles"
            out.append(Divergence(kind, key[1], key[0], key[2], None, counts, odd, first, msg, start))
        common = min(len(fs) for fs in per_rank.values())
        total = max(len(fs) for fs in per_rank.values())
        for occ in range(common):
            frames = {r: per_rank[r][occ] for r in ranks}
            label = where if total == 1 else f"{where}, {_ordinal(occ + 1)} compile"
            for kind, (get, show) in _CHECKS.items():
                values: dict[int, Value] = {r: v for r, f in frames.items() if (v := get(f)) is not None}
                odd = odd_ones(values)
                if odd:
                    ids = {r: f.compile_id for r, f in frames.items()}
                    msg = f"{label}: " + _by_value(values, show, odd)
                    out.append(Divergence(kind, key[1], key[0], key[2], occ, values, odd, ids, msg,
                                          min(f.start_s for f in frames.values())))
    order = list(KINDS)
    out.sort(key=lambda d: (order.index(d.kind), d.start_s, d.filename, d.name, d.lineno, d.occurrence or 0))
    return out


def merge_ranks(sessions: Mapping[int, Session], world_size: int | None = None) -> RankSummary:
    """The merged view of a job's rank sessions (``rank -> session``). ``world_size`` defaults
    to the largest one the sessions recorded (or the number of ranks seen)."""
    ranks = sorted(sessions)
    recorded = [s.run.world_size for s in sessions.values() if s.run.world_size]
    world = max([world_size or 0, *recorded, (ranks[-1] + 1) if ranks else 0])
    totals = [rank_totals(r, sessions[r]) for r in ranks]
    targets = sorted({sessions[r].run.target for r in ranks})
    summary = RankSummary(world_size=world, target=", ".join(targets), ranks=totals,
                          missing_ranks=[r for r in range(world) if r not in sessions],
                          divergences=divergences(sessions))
    if totals:
        slow = max(totals, key=lambda t: (t.compile_s, -t.rank))
        fast = min(totals, key=lambda t: (t.compile_s, t.rank))
        summary.slowest, summary.fastest, summary.spread_s = slow.rank, fast.rank, slow.compile_s - fast.compile_s
    summary.headline = headline(summary)
    return summary


def headline(s: RankSummary) -> str:
    n = len(s.ranks)
    parts = [f"{fmt.plural(n, 'rank')}" + (f" of {s.world_size}" if n != s.world_size else "")]
    slow = s.totals(s.slowest) if s.slowest is not None else None
    fast = s.totals(s.fastest) if s.fastest is not None else None
    if slow is not None and fast is not None and n > 1:
        parts.append(f"compile {fmt.seconds(fast.compile_s)} (rank {fast.rank}) to {fmt.seconds(slow.compile_s)} "
                     f"(rank {slow.rank}, slowest)")
    elif slow is not None:
        parts.append(f"compile {fmt.seconds(slow.compile_s)}")
    if s.missing_ranks:
        parts.append(f"no session from {rank_list(s.missing_ranks)}")
    nd = len(s.divergences)
    if nd:
        parts.append(f"{fmt.plural(nd, 'divergence')} between ranks (first: {s.divergences[0].message})")
    elif n > 1:
        parts.append("no divergence: every rank compiled the same frames with the same guards and graph breaks")
    return "; ".join(parts)


def summary_to_json(s: RankSummary) -> dict[str, Any]:
    """``ranks.json``: the summary as JSON (rank-keyed maps get string keys)."""
    data = asdict(s)
    for d in data["divergences"]:
        d["values"] = {str(k): v for k, v in d["values"].items()}
        d["compile_ids"] = {str(k): v for k, v in d["compile_ids"].items()}
    data["format"] = "dynaprof-ranks/1"
    return data
