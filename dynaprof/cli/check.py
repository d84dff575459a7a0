"""``dynaprof check RUN``: fail CI when a run's compile time or Dynamo facts exceed a budget.

Exit status 0 within budget (one ``ok: ...`` line), 1 with one line per breach, 2 on bad input
(missing run, bad numbers, no budget, ``--max-regression`` without ``--baseline``). The result
goes to stdout (it is this command's output); errors go to stderr. See docs/ci.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from dynaprof.analysis.budgets import Budget, check, summary
from dynaprof.cli.common import display_path
from dynaprof.errors import DynaprofError
from dynaprof.model.store import load_session
from dynaprof.pipeline import info

EXIT_OVER_BUDGET = 1


def _number(kind: type[int] | type[float], suffix: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        raw = text.strip()
        if suffix and raw.endswith(suffix):
            raw = raw[: -len(suffix)].strip()
        try:
            v: float = kind(raw)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not v >= 0 or v == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
        return v

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


class CheckCommand:
    name = "check"
    help = "exit 1 when a run exceeds compile-time budgets (for CI)"
    description = (
        "Checks a run (folder or session.json) against budgets: total compile time, restarts, guards per "
        "frame, graph breaks, recompiles, and regression against a baseline run. A suite (dynaprof suite) is "
        "checked per model: --max-compile-time, --base SUITE --max-regression PCT. Exit status 0 when within "
        "budget, 1 with each breach listed, 2 on bad input."
    )

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("run", type=Path, metavar="RUN", help="run folder or session.json to check")
        g = p.add_argument_group("budgets (at least one)")
        g.add_argument("--max-compile-time", type=_number(float, "s"), metavar="SECONDS",
                       help="total compile time (frames nested in another compile count once)")
        g.add_argument("--max-restarts", type=_number(int, ""), metavar="N", help="restarts of analysis, all frames")
        g.add_argument("--max-guards", type=_number(int, ""), metavar="N", help="guards of any single compiled frame")
        g.add_argument("--max-fx-nodes", type=_number(int, ""), metavar="N",
                       help="nodes in the FX graph of any single compiled frame (exact, not timed)")
        g.add_argument("--max-graph-breaks", type=_number(int, ""), metavar="N", help="graph breaks, all frames")
        g.add_argument("--max-recompiles", type=_number(int, ""), metavar="N",
                       help="compiles of a code location beyond its first")
        g.add_argument("--max-eager-fallbacks", type=_number(int, ""), metavar="N",
                       help="calls run uncompiled because their frame hit the recompile limit (each frame "
                            "that hit it counts at least 1)")
        g.add_argument("--max-growth", action="append", metavar="K|CAUSE=K",
                       help="a sweep (dynaprof sweep): exit 1 when a growth exponent's interval lies above K "
                            "(compile time and every cost over 5%% of it), or CAUSE's (a cause, phase group or "
                            "count); repeatable")
        g.add_argument("--baseline", "--base", type=Path, metavar="RUN",
                       help="baseline run for --max-regression (a suite: the BASE suite)")
        g.add_argument("--max-regression", type=_number(float, "%"), metavar="PCT",
                       help="allowed growth of total compile time over --baseline, in percent (a suite: of each "
                            "model's, beyond the noise)")

    def run(self, args: argparse.Namespace) -> int:
        from dynaprof.model.suite import is_suite
        from dynaprof.model.sweep import is_sweep

        if args.max_growth or is_sweep(args.run):  # a sweep's growth exponents
            from dynaprof.cli.sweep_gates import check_sweep

            return check_sweep(args)
        if is_suite(args.run):  # per model
            from dynaprof.cli.suite_gates import check_suite

            return check_suite(args)
        if args.max_regression is not None and args.baseline is None:
            raise DynaprofError("--max-regression needs --baseline RUN to compare with")
        if args.baseline is not None and args.max_regression is None:
            raise DynaprofError("--baseline needs --max-regression PCT (the allowed growth in percent)")
        budget = Budget(
            max_compile_time_s=args.max_compile_time,
            max_restarts=_int(args.max_restarts), max_guards=_int(args.max_guards),
            max_fx_nodes=_int(args.max_fx_nodes),
            max_graph_breaks=_int(args.max_graph_breaks), max_recompiles=_int(args.max_recompiles),
            max_eager_fallbacks=_int(args.max_eager_fallbacks), max_regression_pct=args.max_regression,
        )
        if budget.is_empty():
            raise DynaprofError("no budget given; pass at least one of --max-compile-time, --max-restarts, "
                                "--max-guards, --max-fx-nodes, --max-graph-breaks, --max-recompiles, "
                                "--max-eager-fallbacks, --max-regression")
        session = load_session(args.run)
        baseline = load_session(args.baseline) if args.baseline is not None else None
        if not session.run.complete:
            info(f"dynaprof check: warning: {display_path(args.run)} is from a run that did not finish "
                 f"({session.run.end_reason}); its numbers may be partial")
        result = check(session, budget, baseline)
        print(summary(session, result))
        if result.ok:
            return 0
        for b in result.breaches:
            print(f"  - {b.message}")
        for line in result.checked:
            print(f"  ok: {line}")
        return EXIT_OVER_BUDGET


def _int(v: float | None) -> int | None:
    return None if v is None else int(v)


COMMAND = CheckCommand()
