"""Command-line entry point: ``dynaprof <command> ...``.

Each subcommand is a module in this package exposing a ``COMMAND`` object that satisfies the
``Command`` protocol (``dynaprof.cli.common``). ``main`` turns DynaprofError into one line on
stderr and its exit status; nothing below the CLI prints or exits.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from dynaprof.cli.common import Command
from dynaprof.errors import EXIT_BAD_INPUT, DynaprofError
from dynaprof.version import __version__

#: subcommand modules, in the order `--help` lists them
_COMMAND_MODULES = (
    "dynaprof.cli.run",
    "dynaprof.cli.sweep",
    "dynaprof.cli.suite_run",
    "dynaprof.cli.report",
    "dynaprof.cli.compare",
    "dynaprof.cli.pr",
    "dynaprof.cli.check",
    "dynaprof.cli.view",
)


def _commands() -> list[Command]:
    return [importlib.import_module(name).COMMAND for name in _COMMAND_MODULES]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse prints usage then exits 2; keep the status, make the message one clear line
        self.print_usage(sys.stderr)
        raise DynaprofError(f"{self.prog}: {message}", EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dynaprof",
        description="Profile where torch.compile spends its compile time.",
        epilog="Start with: dynaprof run your_script.py [args...]",
    )
    parser.add_argument("--version", action="version", version=f"dynaprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for cmd in _commands():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.description)
        cmd.prepare_parser(p)
        p.set_defaults(_command=cmd)
    return parser


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
        args.argv = list(args_list)  # the command line as typed, for "how to reproduce" lines
        cmd: Command | None = getattr(args, "_command", None)
        if cmd is None:
            parser.print_help(sys.stderr)
            return EXIT_BAD_INPUT
        return cmd.run(args)
    except DynaprofError as e:
        already = e.message.startswith(("dynaprof: ", "dynaprof "))  # argparse's own "dynaprof run: ..." lines
        print(e.message if already else f"dynaprof: error: {e.message}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("dynaprof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
