"""``dynaprof run``: run a script as python would and profile every Dynamo compile in it.

This module parses and checks the options and prints; running, capturing and writing the run
folder is ``dynaprof.pipeline``'s (``run_script``)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from dynaprof import fmt
from dynaprof.cli.common import display_path, summary_width
from dynaprof.cli.executor_options import add_executor_options, check_executor_options, engine_options
from dynaprof.cli.outputs import render_options
from dynaprof.cli.run_options import add_run_options
from dynaprof.errors import DynaprofError
from dynaprof.model.capture_options import RUN, switch_values, switched
from dynaprof.model.environment import redact_argv
from dynaprof.pipeline import Outcome, ScriptRun, info, run_script
from dynaprof.render.base import RenderOptions
from dynaprof.run_folder.location import default_run_dir, prepare_out_dir


def _target(args: argparse.Namespace) -> tuple[str, str, list[str]]:
    if args.module:
        module, *rest = args.module
        if args.script:
            rest += args.script
        return "module", module, rest
    script = list(args.script)
    if script and script[0] == "--":
        script = script[1:]
    if not script:
        raise DynaprofError("nothing to run: give a script (dynaprof run script.py [args]) or -m module")
    path, *rest = script
    p = Path(path)
    if not p.exists():
        raise DynaprofError(f"can't open file {path!r}: no such file")
    if p.is_dir():
        raise DynaprofError(f"can't run {path!r}: it is a folder (did you mean -m?)")
    if not os.access(p, os.R_OK):
        raise DynaprofError(f"can't open file {path!r}: permission denied")
    return "script", path, rest


class RunCommand:
    name = "run"
    help = "run a script (or -m module) and profile every torch.compile compile in it"
    description = (
        "Runs SCRIPT exactly as `python SCRIPT ARGS` would (same argv, __main__, sys.path[0], cwd, stdin "
        "and exit status) and records every Dynamo frame compile: ids, phases, restarts, graph breaks, "
        "recompiles, guards, and sampled stacks of where the compile time went."
    )

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        add_run_options(p)
        add_executor_options(p, default=None)

    def run(self, args: argparse.Namespace) -> int:
        from dynaprof.cli import ranks_support
        from dynaprof.cli.outputs import print_written
        from dynaprof.render.terminal import summary_text

        kind, target, rest = _target(args)
        if args.executor is not None:
            check_executor_options(args)
        options = render_options(args)
        # a farmed-out repeat is a `dynaprof run` of its own: the options given, but one run with the
        # task's caches (no --repeat, no --warm)
        child_options = ranks_support.forwarded_options(args, leave=frozenset({"repeat", "warm"}))
        run = _script_run(args, kind, target, rest)
        stem = Path(run.target).stem if run.kind == "script" else run.target.rsplit(".", 1)[-1]
        if args.nproc_per_node is not None:
            return ranks_support.launch_ranks(args, args.output or default_run_dir(stem), run.kind, run.target,
                                              run.args, options)
        rank = ranks_support.current_rank()
        if rank is not None:
            run_dir = ranks_support.prepare_rank_dir(args.output, stem, args.force).resolve()
        else:
            run_dir = prepare_out_dir(args.output or default_run_dir(stem), args.force).resolve()
        if not args.quiet and rank is None:
            info(f"dynaprof: profiling {fmt.terminal_safe(run.target)} -> {fmt.terminal_safe(display_path(run_dir))}/")
        if args.executor is not None:
            out = _farmed(args, run, run_dir, options, child_options)
        else:
            out = run_script(dataclasses.replace(run, no_progress=rank is not None), run_dir, options, info)
        if out.error is not None:  # the script ran; its exit status is still what we return
            info(f"dynaprof: error: {out.error}; the capture journal is kept: re-run "
                 f"`dynaprof report {fmt.terminal_safe(display_path(run_dir))}` once there is space")
        elif rank is not None:
            ranks_support.finish_rank(out.session, run_dir, out.notes, options, args.quiet)
        elif not args.quiet:
            info("")
            sys.stderr.write(summary_text(out.session, options.max_rows, summary_width(), screen=True))
            print_written(run_dir, out.written, out.notes)
        return out.exit_status


def _farmed(args: argparse.Namespace, run: ScriptRun, run_dir: Path, options: RenderOptions,
            child_options: list[str]) -> Outcome:
    """``run --repeat N --executor E``: the repeats on the engine's workers (``pipeline.run_repeats_on``)."""
    from dynaprof.executors import make_engine
    from dynaprof.pipeline import run_repeats_on

    if args.nproc_per_node is not None or args.counterfactual or args.torch_trace or args.sampler == "py-spy":
        raise DynaprofError("--executor farms out --repeat runs: it does not combine with --nproc-per-node, "
                            "--counterfactual, --torch-trace or --sampler py-spy")
    engine = make_engine(engine_options(args, run_dir))
    try:
        return run_repeats_on(run, run_dir, options, info, engine, child_options)
    finally:
        engine.close()


def _script_run(args: argparse.Namespace, kind: str, target: str, rest: list[str]) -> ScriptRun:
    """The run ``args`` ask for, its options checked (py-spy falls back to the builtin sampler, said)."""
    from dynaprof.cli import ranks_support
    from dynaprof.model.capture_options import chosen_rate, default_rate

    try:
        args.rate, adapt = chosen_rate(args.rate, args.sampler)
    except ValueError as e:
        raise DynaprofError(f"--rate must be {e}") from None
    if args.native and args.sampler != "py-spy":
        raise DynaprofError("--native needs --sampler py-spy (native frames come from py-spy)")
    if args.sampler == "py-spy":
        from dynaprof.capture.pyspy import preflight

        why = preflight()
        if why is not None:
            info(f"dynaprof: {why}; falling back to the builtin sampler")
            args.sampler, args.rate, args.native = "builtin", default_rate("builtin"), False
    ranked = args.nproc_per_node is not None or ranks_support.current_rank() is not None
    if args.repeat < 1:
        raise DynaprofError(f"--repeat must be at least 1, got {args.repeat}")
    if args.repeat > 1 and (ranked or args.sampler == "py-spy" or args.torch_trace):
        raise DynaprofError("--repeat runs one process at a time with the builtin sampler: it does not "
                            "combine with torchrun ranks, --sampler py-spy or --torch-trace")
    if args.counterfactual and (args.repeat > 1 or ranked):
        raise DynaprofError("--counterfactual compares one run with one more: it does not combine with --repeat "
                            "or torchrun ranks")
    if args.warm and args.repeat == 1:
        raise DynaprofError("--warm goes with --repeat N (a single run uses the caches as they are)")
    return ScriptRun(
        kind, target, rest, redact_argv(["dynaprof", *args.argv]), args.sampler, args.rate, native=args.native,
        capture=switched(switch_values(vars(args), RUN)),
        cprofile=args.cprofile, torch_trace=args.torch_trace, repeat=args.repeat, warm=args.warm,
        counterfactual=args.counterfactual, quiet=args.quiet, adapt_rate=adapt,
    )  # fmt: skip


COMMAND = RunCommand()
