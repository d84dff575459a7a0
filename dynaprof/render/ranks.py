"""Multi-rank jobs seen from render: the merged view, ``ranks.md``, ``ranks.html``, ``ranks.json`` and the
terminal summary, from a ``RankSummary``; plus the index of a rank-by-rank ``dynaprof compare``.

Like every renderer this only returns text. Links point at each rank's own outputs
(``rank-N/report.html``, ``rank-N/summary.md``) relative to the merged view's folder. Function
and file names come from user code: escaped with ``md_escape`` / ``esc`` everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from dynaprof import fmt
from dynaprof.analysis.rank_desync import DESYNC_KINDS
from dynaprof.analysis.ranks import KINDS, Divergence, RankSummary, RankTotals, rank_list, summary_to_json
from dynaprof.model.store import rank_dir_name
from dynaprof.render import html_toolkit as h
from dynaprof.render.base import TABLE_ROWS, Files, page_rows
from dynaprof.render.markdown import md_escape, md_table

WHY = (
    "Ranks that compile different graphs run different collectives (or the same ones in another "
    "order), and a distributed job then hangs in NCCL/gloo until its collective timeout. Different "
    "recompile or guard counts mean some ranks stall in a compile while the others wait at the next "
    "collective. Usual causes: rank-dependent Python (`if rank == 0:`), rank-dependent shapes or "
    "data-dependent graph breaks."
)


def _exit(t: RankTotals) -> str:
    if t.end_reason == "exited":
        return str(t.exit_status)
    return f"{t.end_reason} ({t.exit_status})" if t.exit_status is not None else t.end_reason


def _where(d: Divergence) -> str:
    occ = "" if d.occurrence is None else f" #{d.occurrence + 1}"
    return f"{d.name} ({d.filename}:{d.lineno}){occ}"


def _rank_cells(t: RankTotals) -> list[str]:
    return [fmt.count(t.frames), fmt.seconds(t.compile_s), fmt.count(t.restarts), fmt.count(t.graph_breaks),
            fmt.count(t.guards), fmt.count(t.recompiles), fmt.count(t.failed), _exit(t)]


_RANK_HEADER = ["frames", "compile", "restarts", "graph breaks", "guards", "recompiles", "failed", "exit"]


def slowest_line(s: RankSummary) -> str:
    slow = s.totals(s.slowest) if s.slowest is not None else None
    if slow is None:
        return "no rank session"
    if len(s.ranks) < 2:
        return f"rank {slow.rank}: {fmt.seconds(slow.compile_s)} compile"
    return (f"rank {slow.rank}: {fmt.seconds(slow.compile_s)} compile, {fmt.seconds(s.spread_s)} more than "
            f"the fastest (rank {s.fastest})")


# ---------------------------------------------------------------------------------------------
# terminal


def ranks_text(s: RankSummary, max_rows: int = TABLE_ROWS) -> str:
    lines = [f"dynaprof: {fmt.terminal_safe(fmt.one_line(s.target, 100))} on {len(s.ranks)} of {s.world_size} "
             f"rank{'' if s.world_size == 1 else 's'} (merged view)", ""]
    rows = [[str(t.rank), *_rank_cells(t)] for t in s.ranks]
    lines += ["  " + r for r in fmt.table(["rank", *_RANK_HEADER], rows, "rrrrrrrrr")]
    lines += ["", f"  slowest: {slowest_line(s)}"]
    if s.missing_ranks:
        lines.append(f"  missing: no session from {rank_list(s.missing_ranks)}")
    nd = len(s.divergences)
    if not nd:
        if len(s.ranks) > 1:
            lines.append("  no divergence: every rank compiled the same frames with the same guards and graph breaks")
        return "\n".join(lines) + "\n"
    lines.append(f"  {fmt.plural(nd, 'divergence')} between ranks (a cause of collective hangs):")
    for d in s.divergences[:max_rows]:
        lines.append(f"    {d.kind:<12} {fmt.terminal_safe(fmt.one_line(d.message, 160))}")
    if nd > max_rows:
        lines.append(f"    ... and {nd - max_rows:,} more (see ranks.md)")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Markdown


def ranks_markdown(s: RankSummary, max_rows: int = TABLE_ROWS) -> str:
    out = [f"# dynaprof: {md_escape(s.target, 200)} on {len(s.ranks)} of {s.world_size} ranks",
           "", f"**{md_escape(s.headline, 400)}**", "", "## Ranks", ""]
    rows = [[str(t.rank), *_rank_cells(t), md_escape(t.hostname, 60),
             f"[report]({rank_dir_name(t.rank)}/report.html) · [summary]({rank_dir_name(t.rank)}/summary.md)"]
            for t in s.ranks]
    out += [md_table(["rank", *_RANK_HEADER, "host", "outputs"], rows, align="rrrrrrrrrll"), "",
            f"Slowest: {md_escape(slowest_line(s))}", ""]
    if s.missing_ranks:
        out += [f"No session from {rank_list(s.missing_ranks)} (the rank did not start, or died before saving).", ""]
    out += [f"## Divergences ({len(s.divergences):,})", ""]
    if s.divergences:
        drows = [[d.kind, md_escape(_where(d)), rank_list(d.ranks),
                  md_escape(d.message, 300)] for d in s.divergences[:max_rows]]
        out += [md_table(["kind", "compile", "differs on", "detail"], drows, total=len(s.divergences),
                         noun="divergences"), ""]
    elif len(s.ranks) > 1:
        out += ["None: every rank compiled the same frames, as often, with the same guards, graph breaks and "
                "graph sizes.", ""]
    out += [f"_Why it matters:_ {WHY}", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# HTML (templates/ranks.html.j2)


@dataclass(frozen=True)
class RanksView:
    """What ``ranks.html`` shows, as text ready to print."""

    headline: str
    kpis: list[h.Kpi]
    ranks: h.Table
    missing: str  # the ranks without a session ("" none)
    slowest: str
    divergences_title: str
    divergences: h.Table | None  # None: no divergence
    why: str
    kinds: list[tuple[str, str]]


def _outputs(rank: int) -> h.Cell:
    d = rank_dir_name(rank)
    return h.Cell(links=(h.Link(d + "/report.html", "report"), h.Link(d + "/summary.md", "summary")))


def ranks_view(s: RankSummary, max_rows: int = TABLE_ROWS) -> RanksView:
    slow = s.totals(s.slowest) if s.slowest is not None else None
    kpis = [
        h.Kpi("ranks", f"{len(s.ranks)} of {s.world_size}",
              f"missing {rank_list(s.missing_ranks)}" if s.missing_ranks else ""),
        h.Kpi("slowest rank", str(slow.rank) if slow else "?",
              f"{fmt.seconds(slow.compile_s)} compile" if slow else ""),
        h.Kpi("spread", fmt.seconds(s.spread_s), "slowest minus fastest compile"),
        h.Kpi("divergences", f"{len(s.divergences):,}", "compiles that differ between ranks"),
    ]
    cols = [h.Col("rank", True), *(h.Col(c, True) for c in _RANK_HEADER), h.Col("host"), h.Col("outputs")]
    rows = [[(str(t.rank), t.rank), (fmt.count(t.frames), t.frames), h.secs(t.compile_s), h.num(t.restarts),
             h.num(t.graph_breaks), h.num(t.guards), h.num(t.recompiles), h.num(t.failed), _exit(t), t.hostname,
             _outputs(t.rank)] for t in s.ranks]
    divergences = None
    if s.divergences:
        dcols = [h.Col("kind"), h.Col("compile", code=True), h.Col("differs on"), h.Col("compile ids", code=True),
                 h.Col("detail")]
        drows = [[h.Cell(d.kind, span="dp-pill"), _where(d), rank_list(d.ranks),
                  ", ".join(f"{r}: {cid}" for r, cid in sorted(d.compile_ids.items())), d.message]
                 for d in s.divergences[:page_rows(max_rows)]]
        divergences = h.table(dcols, drows, total=len(s.divergences), noun="divergences")
    return RanksView(s.headline, kpis, h.table(cols, rows), rank_list(s.missing_ranks) if s.missing_ranks else "",
                     slowest_line(s), f"Divergences ({len(s.divergences):,})", divergences, WHY.replace("`", ""),
                     list({**KINDS, **DESYNC_KINDS}.items()))


def ranks_html(s: RankSummary, max_rows: int = TABLE_ROWS) -> str:
    page = h.Page(f"dynaprof ranks: {fmt.one_line(s.target, 100)}", "dynaprof · multi-rank compile-time report",
                  fmt.one_line(s.target, 300), f"{len(s.ranks)} of {s.world_size} ranks",
                  [("summary", "Summary"), ("ranks", "Ranks"), ("divergences", "Divergences"),
                   ("kinds", "What is flagged")],
                  {"headline": s.headline, "world_size": s.world_size, "divergences": len(s.divergences)})
    return h.render_page("ranks.html.j2", page, ranks_view(s, max_rows))


def render_ranks(s: RankSummary, max_rows: int = TABLE_ROWS) -> Files:
    """``ranks.md``, ``ranks.html`` and ``ranks.json`` for the job's folder."""
    return {"ranks.md": ranks_markdown(s, max_rows), "ranks.html": ranks_html(s, max_rows),
            "ranks.json": json.dumps(summary_to_json(s), indent=1, sort_keys=True, allow_nan=False) + "\n"}


# ---------------------------------------------------------------------------------------------
# rank-by-rank comparison index


@dataclass(frozen=True)
class RankComparison:
    rank: int
    base_s: float | None  # None: that side has no session for this rank
    new_s: float | None
    headline: str
    folder: str | None  # relative folder holding compare.html, when compared


@dataclass(frozen=True)
class IndexView:
    """What the rank-by-rank ``compare.html`` shows."""

    divergences: str  # the divergence counts line ("" unknown)
    ranks: h.Table


def compare_index(rows: Sequence[RankComparison], names: tuple[str, str], divergences: tuple[int, int] | None) -> Files:
    """``compare.md`` and ``compare.html`` listing each rank's comparison."""
    div = (f"Divergences between ranks: {divergences[0]:,} in BASE, {divergences[1]:,} in NEW."
           if divergences is not None else "")
    md_rows = [[str(r.rank), fmt.seconds(r.base_s), fmt.seconds(r.new_s),
                f"[{r.folder}/compare.md]({r.folder}/compare.md)" if r.folder else "",
                md_escape(r.headline, 400)] for r in rows]
    md = "\n".join([f"# dynaprof compare (rank by rank): {md_escape(names[0])} -> {md_escape(names[1])}", "",
                    *([div, ""] if div else []),
                    md_table(["rank", "BASE compile", "NEW compile", "report", "change"], md_rows, align="rrrll"), ""])
    cols = [h.Col("rank", True), h.Col("BASE compile", True), h.Col("NEW compile", True), h.Col("report"),
            h.Col("change")]
    html_rows = [[(str(r.rank), r.rank), h.secs(r.base_s), h.secs(r.new_s),
                  h.Cell(links=(h.Link(f"{r.folder}/compare.html", "compare"),)) if r.folder else "", r.headline]
                 for r in rows]
    view = IndexView(div, h.table(cols, html_rows))
    page = h.render_page("ranks_compare.html.j2", h.Page(
        f"dynaprof compare: {names[0]} -> {names[1]}", "dynaprof · compile-time comparison, rank by rank",
        f"{names[0]} → {names[1]}", None, [("ranks", "Ranks")]), view)
    return {"compare.md": md, "compare.html": page}
