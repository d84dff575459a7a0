"""``compare``, ``pr`` and ``check`` on suite folders (``dynaprof suite``): those commands send a
suite here (``model.suite.is_suite``) and keep their own code for runs and sweeps.

* ``dynaprof compare SUITE_A SUITE_B``: per model the noise verdict (``compare``'s interval and
  margin), the exact counts that changed and the kind of cause that moved most; across the suite
  the geometric mean ratio with its interval (``compare.md`` into ``-o DIR``).
* ``dynaprof pr SUITE_A SUITE_B``: the same as a PR comment.
* ``dynaprof check SUITE --max-compile-time S``: per model (its median run).
  ``dynaprof check NEW --base BASE --max-regression PCT``: exit 1 when a model is slower than PCT
  beyond the noise.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from dynaprof import fmt
from dynaprof.cli.common import display_path, write_files
from dynaprof.errors import DynaprofError
from dynaprof.model.suite import Suite, is_suite, load_suite
from dynaprof.pipeline import info
from dynaprof.run_folder.location import prepare_out_dir

EXIT_OVER_BUDGET = 1
#: ``check``'s budgets a suite takes (argparse dests); the rest are a run's
SUITE_BUDGETS = ("max_compile_time", "baseline", "max_regression")


def _both(paths: list[Path]) -> tuple[Suite, Suite]:
    if not all(is_suite(p) for p in paths):
        which = next(p for p in paths if not is_suite(p))
        raise DynaprofError(f"{which}: not a suite folder (no suite.json): compare a suite with a suite")
    return load_suite(paths[0]), load_suite(paths[1])


def _names(names: tuple[str, str]) -> tuple[str, str]:
    return (f"{names[0]}-base", f"{names[1]}-new") if names[0] == names[1] else names


def _warn_parallel(suites: list[tuple[Path, Suite]]) -> None:
    """Times from suites run with different ``--workers`` on one machine are not like for like."""
    local = {s.workers for _, s in suites if s.executor == "local"}
    if len(local) > 1:
        info("dynaprof: warning: the suites ran with different --workers on one machine: parallel runs slow each "
             "other's compiles, so their times are not like for like (the exact counts are)")


def compare_suites_cli(args: argparse.Namespace, names: tuple[str, str], out: Path | None, margin: float) -> int:
    """``dynaprof compare SUITE_A SUITE_B``."""
    from dynaprof.analysis.suite_compare import compare_suites
    from dynaprof.render.suite_report import COMPARE_MD, compare_lines, compare_suites_markdown

    base, new = _both([args.base, args.new])
    _warn_parallel([(args.base, base), (args.new, new)])
    names = _names(names)
    out_dir = prepare_out_dir(out or Path("dynaprof-compare") / f"{names[0]}-vs-{names[1]}", args.force)
    cmp = compare_suites(base, new, margin)
    written = write_files(out_dir, {COMPARE_MD: compare_suites_markdown(cmp, names)})
    info(f"dynaprof compare (suites): {fmt.terminal_safe(names[0])} -> {fmt.terminal_safe(names[1])}")
    for line in compare_lines(cmp):
        info(f"  {line}")
    info(f"wrote {display_path(out_dir)}/: " + ", ".join(p.name for p in written))
    return 0


def pr_suites_cli(paths: list[Path], names: tuple[str, str], number: str, margin: float,
                  prepare: Callable[[Path], Path], post_lines: Callable[[Path, list[Path], str], list[str]]) -> int:
    """``dynaprof pr SUITE_A SUITE_B``: the comparison as ``comment.md`` into the folder
    ``prepare(NEW's folder)`` makes, and the ``gh`` line posting it (``pr``'s own helpers)."""
    from dynaprof.analysis.suite_compare import compare_suites
    from dynaprof.render.suite_report import compare_suites_markdown

    base, new = _both(paths)
    _warn_parallel([(paths[0], base), (paths[1], new)])
    cmp = compare_suites(base, new, margin)
    out = prepare(paths[1] if paths[1].is_dir() else paths[1].parent)
    written = write_files(out, {"comment.md": compare_suites_markdown(cmp, _names(names))})
    info(f"dynaprof: wrote {display_path(out)}/: " + ", ".join(sorted(p.name for p in written)))
    for line in post_lines(out, written, number):
        info(line)
    return 0


def check_suite(args: argparse.Namespace) -> int:
    """``dynaprof check SUITE --max-compile-time S`` (per model) and ``check NEW --base BASE
    --max-regression PCT`` (per model, beyond the noise)."""
    from dynaprof.analysis.suite_compare import compare_suites, compile_time_breaches, regression_breaches

    others = [f"--{d.replace('_', '-')}" for d, v in vars(args).items()
              if d.startswith("max_") and d not in SUITE_BUDGETS and v is not None]
    if others:
        raise DynaprofError(f"{', '.join(others)}: budgets of a run; a suite is checked with --max-compile-time, "
                            "or --base SUITE --max-regression PCT")
    if (args.baseline is None) != (args.max_regression is None):
        raise DynaprofError("--max-regression PCT and --base SUITE go together")
    if args.max_compile_time is None and args.max_regression is None:
        raise DynaprofError("no budget given: a suite is checked with --max-compile-time S (per model), or "
                            "--base SUITE --max-regression PCT")
    new = load_suite(args.run)
    if new.interrupted:
        info(f"dynaprof check: warning: {display_path(args.run)} is from an interrupted suite")
    breaches, checked = [], []
    if args.max_compile_time is not None:
        over, n = compile_time_breaches(new, args.max_compile_time)
        breaches += over
        checked.append(f"compile time of {fmt.plural(n, 'model')} within {fmt.seconds(args.max_compile_time)} "
                       "(median run each)" if not over else "")
    if args.max_regression is not None:
        if not is_suite(args.baseline):
            raise DynaprofError(f"{args.baseline}: not a suite folder (no suite.json): --base takes a suite here")
        base = load_suite(args.baseline)
        _warn_parallel([(args.baseline, base), (args.run, new)])
        cmp = compare_suites(base, new, args.max_regression / 100)
        slower = regression_breaches(cmp)
        breaches += slower
        checked.append(f"no model of {cmp.compared} slower than {args.max_regression:g}% beyond the noise; "
                       f"{cmp.geomean_text()}" if not slower else "")
    checked = [c for c in checked if c]
    if breaches:
        print(f"suite over budget ({fmt.plural(len(breaches), 'breach', 'breaches')}):")
        for b in breaches:
            print(f"  - {fmt.terminal_safe(b.message)}")
        for line in checked:
            print(f"  ok: {fmt.terminal_safe(line)}")
        return EXIT_OVER_BUDGET
    for line in checked:
        print(f"ok: {fmt.terminal_safe(line)}")
    return 0
