"""``compare``, ``pr`` and ``check`` on sweep folders (``dynaprof sweep``): those commands send a
sweep here (``model.sweep.is_sweep``) and keep their own code for runs.

* ``dynaprof compare SWEEP_A SWEEP_B``: each exponent before and after, with intervals, and whether
  the change is outside the noise (``compare.md`` and both growth charts into ``-o DIR``).
* ``dynaprof pr SWEEP_A SWEEP_B``: the same as a PR comment with the two charts.
* ``dynaprof check SWEEP --max-growth 1.3 [--max-growth CAUSE=K]``: exit 1 when an exponent's
  interval lies above its bound.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

from dynaprof import fmt
from dynaprof.cli.common import display_path, write_files
from dynaprof.errors import DynaprofError
from dynaprof.model.sweep import Sweep, is_sweep, load_sweep
from dynaprof.pipeline import info
from dynaprof.run_folder.location import prepare_out_dir

EXIT_OVER_BUDGET = 1
#: the pictures beside a sweep comparison
BASE_SVG = "growth-base.svg"
NEW_SVG = "growth-new.svg"


def _both(paths: list[Path]) -> tuple[Sweep, Sweep]:
    if not all(is_sweep(p) for p in paths):
        which = next(p for p in paths if not is_sweep(p))
        raise DynaprofError(f"{which}: not a sweep folder (no sweep.json): compare a sweep with a sweep")
    base, new = load_sweep(paths[0]), load_sweep(paths[1])
    if base.axis != new.axis:
        info(f"dynaprof: warning: the sweeps vary different parameters ({fmt.terminal_safe(base.axis)} and "
             f"{fmt.terminal_safe(new.axis)}); their exponents are compared as if they were one")
    return base, new


def _files(base: Sweep, new: Sweep, names: tuple[str, str]) -> tuple[dict[str, str], list[str]]:
    """compare.md's text (as ``compare.md``) and the two charts; the terminal lines."""
    from dynaprof.analysis.growth_gate import compare_sweeps
    from dynaprof.render.growth_chart import growth_svg
    from dynaprof.render.sweep_report import compare_markdown

    gb, gn, changes = compare_sweeps(base, new)
    pictures = [(f"BASE {names[0]}: compile time against {gb.axis}", BASE_SVG),
                (f"NEW {names[1]}: compile time against {gn.axis}", NEW_SVG)]
    files = {"compare.md": compare_markdown(changes, gn.axis, names, pictures),
             BASE_SVG: growth_svg(gb), NEW_SVG: growth_svg(gn)}
    moved = [c for c in changes if c.verdict in ("steeper", "flatter")]
    lines = [f"{len(moved)} of {len(changes)} exponents changed outside the noise"]
    shown = moved or [c for c in changes if c.measure == "total"]
    lines += [fmt.terminal_safe(c.text("N")) for c in shown[:8]]
    return files, lines


def compare_sweeps_cli(args: argparse.Namespace, names: tuple[str, str], out: Path | None) -> int:
    """``dynaprof compare SWEEP_A SWEEP_B``."""
    base, new = _both([args.base, args.new])
    if names[0] == names[1]:
        names = (f"{names[0]}-base", f"{names[1]}-new")
    out_dir = prepare_out_dir(out or Path("dynaprof-compare") / f"{names[0]}-vs-{names[1]}", args.force)
    files, lines = _files(base, new, names)
    written = write_files(out_dir, dict(files))
    info(f"dynaprof compare (sweeps): {names[0]} -> {names[1]}")
    for line in lines:
        info(f"  {line}")
    info(f"wrote {display_path(out_dir)}/: " + ", ".join(p.name for p in written))
    return 0


def pr_sweeps_cli(paths: list[Path], names: tuple[str, str], number: str,
                  prepare: Callable[[Path], Path], post_lines: Callable[[Path, list[Path], str], list[str]]) -> int:
    """``dynaprof pr SWEEP_A SWEEP_B``: the comparison as ``comment.md`` with both charts, into the
    folder ``prepare(NEW's folder)`` makes, and the ``gh`` line posting it (``pr``'s own helpers)."""
    base, new = _both(paths)
    if names[0] == names[1]:
        names = (f"{names[0]}-base", f"{names[1]}-new")
    files, _ = _files(base, new, names)
    files["comment.md"] = files.pop("compare.md")
    out = prepare(paths[1] if paths[1].is_dir() else paths[1].parent)
    written = write_files(out, dict(files))
    info(f"dynaprof: wrote {display_path(out)}/: " + ", ".join(sorted(p.name for p in written)))
    for line in post_lines(out, written, number):
        info(line)
    return 0


def parse_max_growth(values: list[str]) -> tuple[float | None, dict[str, float]]:
    """``--max-growth 1.3`` (total and every cost that matters) and ``--max-growth CAUSE=K``."""
    default: float | None = None
    named: dict[str, float] = {}
    for text in values:
        name, sep, bound = text.rpartition("=")
        raw = bound.strip()
        try:
            k = float(raw)
        except ValueError:
            raise DynaprofError(f"--max-growth {text!r}: expected an exponent (1.3) or CAUSE=K") from None
        if not math.isfinite(k):
            raise DynaprofError(f"--max-growth {text!r}: the bound must be a finite number")
        if sep:
            if not name.strip():
                raise DynaprofError(f"--max-growth {text!r}: name the cause, phase or count before '='")
            named[name.strip()] = k
        else:
            default = k
    return default, named


#: ``check``'s budgets of a run (argparse dests): a sweep takes none of them
RUN_BUDGETS = ("max_compile_time", "max_restarts", "max_guards", "max_fx_nodes", "max_graph_breaks",
               "max_recompiles", "max_eager_fallbacks", "baseline", "max_regression")


def check_sweep(args: argparse.Namespace) -> int:
    """``dynaprof check SWEEP --max-growth ...``."""
    from dynaprof.analysis.growth import growth
    from dynaprof.analysis.growth_gate import check_growth

    other_budgets = [f"--{d.replace('_', '-')}" for d in RUN_BUDGETS if getattr(args, d, None) is not None]
    if not is_sweep(args.run):
        raise DynaprofError(f"--max-growth checks a sweep (dynaprof sweep); {args.run} is not a sweep folder")
    if other_budgets:
        raise DynaprofError(f"{', '.join(other_budgets)}: budgets of a run; a sweep is checked with --max-growth")
    if not args.max_growth:
        raise DynaprofError("a sweep is checked with --max-growth K (or CAUSE=K)")
    default, named = parse_max_growth(args.max_growth)
    sweep = load_sweep(args.run)
    g = growth(sweep)
    result = check_growth(g, default, named)
    if result.unknown:
        known = ", ".join(sorted({f.label for f in g.fits}))
        raise DynaprofError(f"--max-growth: no fitted measure named {', '.join(map(repr, result.unknown))} in "
                            f"this sweep (it has: {fmt.one_line(known, 400)})")
    if sweep.interrupted:
        info(f"dynaprof check: warning: {display_path(args.run)} is from an interrupted sweep")
    if result.breaches:
        breaches = fmt.plural(len(result.breaches), "breach", "breaches")
        print(f"growth over budget with {fmt.terminal_safe(g.axis)} ({breaches}):")
        for b in result.breaches:
            print(f"  - {fmt.terminal_safe(b.message)}")
        for line in result.checked:
            print(f"  ok: {fmt.terminal_safe(line)}")
        return EXIT_OVER_BUDGET
    print(f"ok: growth with {fmt.terminal_safe(g.axis)} within budget ({fmt.plural(len(result.checked), 'exponent')})")
    for line in result.checked:
        print(f"  ok: {fmt.terminal_safe(line)}")
    return 0
