"""The options of ``dynaprof run``: declared here, below ``run`` and ``ranks_support``, because
the multi-rank launcher forwards them to the ranks (``ranks_support.forwarded_options``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dynaprof.cli.outputs import add_render_options
from dynaprof.model.capture_options import PYSPY_RATE_HZ, RUN, CaptureOptions, add_switches
from dynaprof.run_folder.location import RUNS_DIR


def add_run_options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    """Add ``dynaprof run``'s options to ``p``; returns them (argparse's public ``Action`` objects:
    ``option_strings``, ``dest``, ``default``, ``nargs``, ``const``), in the order they were added."""
    added: list[argparse.Action] = []  # argparse's Action objects: option strings, dest, default
    added.append(p.add_argument(
        "-o", "--output", type=Path, metavar="DIR", help=f"run folder (default: a new folder under ./{RUNS_DIR}/)"
    ))
    added.append(p.add_argument("--force", action="store_true", help="write into an existing non-empty DIR"))
    added += _capture_options(p)
    added += _run_modes(p)
    added += add_render_options(p)
    added.append(p.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        metavar="MODULE ...",
        help="run a library module as a script (like python -m)",
    ))
    added.append(p.add_argument("script", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS ...]"))
    return added


def _capture_options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    """What is recorded while the script runs."""
    added: list[argparse.Action] = []
    added.append(p.add_argument(
        "--sampler",
        choices=("builtin", "py-spy", "none"),
        default="builtin",
        help="stack sampler during compiles (default: builtin, in-process)",
    ))
    added.append(p.add_argument(
        "--rate",
        type=float,
        default=None,
        metavar="HZ",
        help=f"samples per second of wall time (default: builtin up to {CaptureOptions.rate_hz:g}, lower where a "
             f"sample would cost a compile over 3%% of its time, measured once per boot; py-spy {PYSPY_RATE_HZ:g}). "
             "Given, the rate is fixed",
    ))
    added.append(p.add_argument("--native", action="store_true", help="with --sampler py-spy: include C/C++ frames"))
    added.append(p.add_argument(
        "--cprofile",
        action="store_true",
        help="also run cProfile during compiles (exact call counts; slows compiles ~2x)",
    ))
    added.append(p.add_argument(
        "--torch-trace", type=Path, metavar="DIR", help="also write a TORCH_TRACE log (for tlparse) into DIR"
    ))
    added += add_switches(p, RUN)
    return added


def _run_modes(p: argparse.ArgumentParser) -> list[argparse.Action]:
    """How many runs, of what, and what is said."""
    added: list[argparse.Action] = []
    added.append(p.add_argument(
        "--counterfactual",
        action="store_true",
        help="then run the script once more, with cold compiler caches and every parametrization of what "
        "torch.compile is given folded first (remove_parametrizations(..., leave_parametrized=True)): the "
        "Inductor kernels only the parametrized run builds go to the parametrization, and the report gives "
        "the compile time without it (docs/causes.md)",
    ))
    added.append(p.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr"))
    added.append(p.add_argument(
        "--repeat", type=int, default=1, metavar="N",
        help="run the script N times, each in a fresh process with cold compiler caches; the session keeps "
        "every run's compile times and the report is drawn from the median run",
    ))
    added.append(p.add_argument(
        "--warm", action="store_true",
        help="with --repeat: keep the compiler caches (TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR) as they are",
    ))
    added.append(p.add_argument(
        "--nproc-per-node",
        metavar="N",
        help="run N ranks with torchrun (torch.distributed.run --standalone): one run folder per rank "
        "in DIR/rank-<N>/ and a merged view in DIR/ranks.html (docs/multi-rank.md)",
    ))
    return added
