"""Comparing runs seen from the cli: ``dynaprof compare BASE NEW`` loads, compares, writes and prints.

Writes ``compare.md`` (for the PR), ``compare.html`` (self-contained) and the differential
flamegraphs into ``-o DIR`` (default ``./dynaprof-compare/<base>-vs-<new>``, made unique), and
prints the headline on stderr.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from dynaprof import fmt
from dynaprof.analysis.compare import Comparison, cause_changes, cause_text, compare_sessions, value, verdict_lines
from dynaprof.analysis.noise import DEFAULT_MARGIN
from dynaprof.cli import ranks_support
from dynaprof.cli.common import display_path, write_files
from dynaprof.errors import DynaprofError
from dynaprof.model.session import CATEGORY_LABELS, Session
from dynaprof.model.store import SESSION_FILE, rank_dir_name
from dynaprof.model.store import load_session as _load_stored
from dynaprof.pipeline import info
from dynaprof.render import cache_section
from dynaprof.render.compare_report import render_compare
from dynaprof.run_folder.location import prepare_out_dir

COMPARE_DIR = "dynaprof-compare"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def load_session(path: Path) -> Session:
    """A saved session with its attribution derived again by today's rules, as ``report`` and ``pr``
    derive it: two runs saved by different dynaprof versions are compared on one breakdown."""
    from dynaprof.analysis.attribution import apply_attribution

    session = _load_stored(path)
    apply_attribution(session)
    return session


def run_name(path: Path) -> str:
    """A short file-safe name for a run: its folder's name (also for a session.json inside it)."""
    p = Path(path)
    if p.name == SESSION_FILE or p.suffix == ".json":
        p = p.parent if p.name == SESSION_FILE else p.with_suffix("")
    name = p.resolve().name if p.name in ("", ".", "..") else p.name
    return _UNSAFE.sub("_", name).strip("._") or "run"


def default_out_dir(base: str, new: str) -> Path:
    """``./dynaprof-compare/<base>-vs-<new>``, with ``-2``, ``-3``... when it is taken."""
    root = Path(COMPARE_DIR) / f"{base}-vs-{new}"
    path, n = root, 2
    while path.exists() and (not path.is_dir() or any(path.iterdir())):
        path = root.with_name(f"{root.name}-{n}")
        n += 1
    return path


def add_margin_option(p: argparse.ArgumentParser) -> None:
    """``--margin PCT``, for compare and pr."""
    p.add_argument("--margin", type=float, metavar="PCT", default=100 * DEFAULT_MARGIN,
                   help="the practical margin, in percent: a change of compile time smaller than this is within "
                        f"noise whatever its interval says (default {100 * DEFAULT_MARGIN:g}, this project's test "
                        "machine's run-to-run spread: docs/reports.md)")


def margin_of(args: argparse.Namespace) -> float:
    """``--margin PCT`` as a fraction; a one-line error outside 0-100."""
    pct = float(args.margin)
    if not (math.isfinite(pct) and 0 <= pct < 100):
        raise DynaprofError(f"--margin must be a percentage from 0 up to 100, got {pct:g}")
    return pct / 100


def explain_lines(cmp: Comparison, limit: int = 3) -> list[str]:
    """The change explained by cause first (the causes that moved most, with their phases), then
    by phase (the cause x phase table's columns); or why the cause view is missing."""
    total = cmp.totals["compile_s"].delta or 0.0
    out = []
    if cmp.causes is None:
        out.append(cmp.cause_note)
    else:
        out += [f"by cause: {cause_text(cmp, k, total)}" for k, _ in cause_changes(cmp)[:limit]]
    moved = sorted(((k, c) for k, c in cmp.categories.items() if c.changed and c.delta is not None),
                   key=lambda kc: (-abs(kc[1].delta or 0.0), kc[0]))[:limit]
    if moved:
        out.append("by phase: " + ", ".join(
            f"{value('cat_s', c.delta, cmp.normalize, True)} {CATEGORY_LABELS.get(k, k)}" for k, c in moved))
    return [fmt.terminal_safe(line) for line in out if line]


def compare_ranks(base: Path, new: Path, out: Path | None, normalize: bool, force: bool) -> int:
    """Rank-by-rank ``dynaprof compare``: each rank of BASE with the same rank of NEW (a single
    run on one side is compared with every rank of the other), into ``OUT/rank-N/``, plus an
    index (``compare.md``, ``compare.html``) with each rank's headline."""
    from dynaprof.render.ranks import RankComparison, compare_index

    bs, ns = ranks_support.rank_sides(base), ranks_support.rank_sides(new)
    ranks = sorted(set(bs or {}) | set(ns or {}))
    names = (run_name(base), run_name(new))
    if names[0] == names[1]:
        names = (f"{names[0]}-base", f"{names[1]}-new")
    out_dir = prepare_out_dir(out or default_out_dir(*names), force)
    rows: list[RankComparison] = []
    loaded: tuple[dict[int, Session], dict[int, Session]] = ({}, {})
    info(f"dynaprof compare (rank by rank): {names[0]} -> {names[1]}{' (normalized)' if normalize else ''}")
    for rank in ranks:
        bp = base if bs is None else bs.get(rank)
        np_ = new if ns is None else ns.get(rank)
        b = load_session(bp) if bp is not None else None
        n = load_session(np_) if np_ is not None else None
        if b is not None and bs is not None:
            loaded[0][rank] = b
        if n is not None and ns is not None:
            loaded[1][rank] = n
        if b is None or n is None:
            side = "BASE" if b is None else "NEW"
            rows.append(RankComparison(rank, b.total_compile_s if b else None, n.total_compile_s if n else None,
                                       f"no session for this rank in {side}", None))
            continue
        cmp = compare_sessions(b, n, normalize=normalize)
        folder = rank_dir_name(rank)
        rank_names = (f"{names[0]}-{folder}", f"{names[1]}-{folder}")
        write_files(out_dir / folder, render_compare(cmp, b, n, names=rank_names))
        rows.append(RankComparison(rank, b.total_compile_s, n.total_compile_s, cmp.headline, folder))
        info(f"  rank {rank}: {cmp.headline}")
    divs = None
    from dynaprof.analysis.ranks import merge_ranks

    if bs is not None and ns is not None and loaded[0] and loaded[1]:
        divs = (len(merge_ranks(loaded[0]).divergences), len(merge_ranks(loaded[1]).divergences))
        info(f"  divergences between ranks: {divs[0]:,} in BASE, {divs[1]:,} in NEW")
    written = write_files(out_dir, compare_index(rows, names, divs))
    info(f"wrote {display_path(out_dir)}/: " + ", ".join(p.name for p in written) + " and rank-N/compare.*")
    return 0


class CompareCommand:
    name = "compare"
    help = "compare two runs: compile-time deltas per frame, cause and phase, differential flamegraphs"
    description = (
        "Compares BASE and NEW (run folders or session.json files): frames are matched by code location "
        "and order; the report gives total and per-frame deltas (compile time, restarts, guards, inlined "
        "calls, graph breaks, causes and phases, parametrized properties) and differential "
        "flamegraphs (red: more time in NEW, blue: less). Each side may be several runs "
        "(--base A1 A2 ... --new B1 B2 ...: single runs, or runs made with --repeat), pooled as repeats: "
        "made alternately, they cancel the machine's drift, and the change gets a noise verdict."
    )

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("pair", type=Path, nargs="*", metavar="BASE NEW",
                       help="the reference run and the run to compare with it (folders or session.json files)")
        p.add_argument("--base", type=Path, nargs="+", dest="base_runs", metavar="RUN",
                       help="several runs of the reference side, pooled as repeats (with --new, instead of BASE NEW)")
        p.add_argument("--new", type=Path, nargs="+", dest="new_runs", metavar="RUN",
                       help="several runs of the side compared with it, pooled as repeats")
        p.add_argument("-o", "--output", type=Path, metavar="DIR",
                       help=f"output folder (default: ./{COMPARE_DIR}/<base>-vs-<new>)")
        p.add_argument("--normalize", action="store_true",
                       help="compare shares of each run's total compile time instead of seconds")
        p.add_argument("--force", action="store_true", help="write into an existing non-empty DIR")
        p.add_argument("--rank", type=int, metavar="N",
                       help="multi-rank runs (torchrun): compare rank N only (default: every rank, rank by rank)")
        add_margin_option(p)

    def run(self, args: argparse.Namespace) -> int:
        margin_of(args)  # a bad --margin fails before anything is loaded
        if args.base_runs or args.new_runs:
            if args.pair or not (args.base_runs and args.new_runs):
                raise DynaprofError("give BASE NEW, or --base RUN... --new RUN... (several runs per side)")
            if args.rank is not None:
                raise DynaprofError("--rank compares one BASE with one NEW; pool ranks' runs one side at a time")
            return self._pooled(args)
        if len(args.pair) != 2:
            raise DynaprofError(f"compare needs BASE and NEW (got {fmt.plural(len(args.pair), 'path')}), "
                                "or --base RUN... --new RUN...")
        args.base, args.new = args.pair
        from dynaprof.model.suite import is_suite
        from dynaprof.model.sweep import is_sweep

        if is_suite(args.base) or is_suite(args.new):  # two suites: model by model
            from dynaprof.cli.suite_gates import compare_suites_cli

            return compare_suites_cli(args, (run_name(args.base), run_name(args.new)), args.output, margin_of(args))
        if is_sweep(args.base) or is_sweep(args.new):  # two sweeps: their growth exponents
            from dynaprof.cli.sweep_gates import compare_sweeps_cli

            return compare_sweeps_cli(args, (run_name(args.base), run_name(args.new)), args.output)
        if args.rank is not None:
            args.base, args.new = ranks_support.pick_rank(args.base, args.rank), ranks_support.pick_rank(args.new,
                                                                                                         args.rank)
        elif ranks_support.is_multi_rank_dir(args.base) or ranks_support.is_multi_rank_dir(args.new):
            return compare_ranks(args.base, args.new, args.output, args.normalize, args.force)
        return self._write(args, load_session(args.base), load_session(args.new),
                           (run_name(args.base), run_name(args.new)))

    def _pooled(self, args: argparse.Namespace) -> int:
        from dynaprof.analysis.repeats import pool

        sides = []
        for paths in (args.base_runs, args.new_runs):
            if any(ranks_support.is_multi_rank_dir(p) for p in paths):
                raise DynaprofError("--base/--new pool single-process runs; compare multi-rank runs as BASE NEW")
            sides.append(pool([load_session(p) for p in paths]))
        names = tuple(run_name(paths[0]) + (f"-x{len(paths)}" if len(paths) > 1 else "")
                      for paths in (args.base_runs, args.new_runs))
        return self._write(args, sides[0], sides[1], (names[0], names[1]))

    def _write(self, args: argparse.Namespace, base: Session, new: Session, names: tuple[str, str]) -> int:
        if names[0] == names[1]:
            names = (f"{names[0]}-base", f"{names[1]}-new")
        out_dir = prepare_out_dir(args.output or default_out_dir(*names), args.force)
        cmp = compare_sessions(base, new, normalize=args.normalize, margin=margin_of(args))
        written = write_files(out_dir, render_compare(cmp, base, new, names=names))
        info(f"dynaprof compare: {names[0]} -> {names[1]}{' (normalized)' if args.normalize else ''}")
        for word, text in verdict_lines(cmp):  # exact counts, the noise verdict and the runs' order first
            info(f"  {'note: ' if word == 'note' else ''}{fmt.terminal_safe(text)}")
        info(f"  {cmp.headline}")
        for line in explain_lines(cmp):
            info(f"  {line}")
        if cmp.only_base or cmp.only_new:
            info(f"  unmatched frames: {len(cmp.only_base):,} only in BASE, {len(cmp.only_new):,} only in NEW")
        for line in cache_section.compare_lines(base, new, limit=5):
            info(f"  cache: {fmt.terminal_safe(line)}")
        info(f"wrote {display_path(out_dir)}/: " + ", ".join(p.name for p in written))
        return 0


COMMAND = CompareCommand()
