"""The IPython / Jupyter magics: ``%load_ext dynaprof``, then ``%%dynaprof`` or ``%dynaprof``.

``%%dynaprof [-o DIR] [options]`` profiles the compiles of a cell (``dynaprof.profile`` around
it), writes the run folder, and shows the terminal summary and the user-code flamegraph inline.
``%dynaprof [options] STATEMENT`` does the same for one statement. Re-running with the same
``-o DIR`` replaces that folder's earlier run. The last profile is ``_dynaprof`` in the
namespace (``_dynaprof.session``). IPython is only ever imported by IPython itself: this module
is loaded by ``%load_ext dynaprof`` and takes the shell it is given.
"""

from __future__ import annotations

import argparse
import ast
import html
import importlib
import re
import shlex
from pathlib import Path
from typing import Any

from dynaprof.api import Profile, ProfileError, clear_previous_run
from dynaprof.run_folder.location import RUNS_DIR, default_run_dir

MAGIC = "dynaprof"

class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # never exit the kernel: one line instead
        raise ProfileError(f"%{MAGIC}: {message}")


def _parser() -> argparse.ArgumentParser:
    """The magics' flags; their defaults are the capture's and a run folder's (``CaptureOptions``,
    ``RUN_FOLDER_OPTIONS``), as ``dynaprof run``'s are."""
    from dynaprof.model.capture_options import NOTEBOOK, CaptureOptions, add_switches
    from dynaprof.render.base import EXPORT_MODES, RUN_FOLDER_OPTIONS

    p = _Parser(prog=f"%%{MAGIC}", add_help=False)
    p.add_argument("-o", "--output", metavar="DIR")
    p.add_argument("--force", action="store_true")
    p.add_argument("--sampler", choices=("builtin", "none"), default=CaptureOptions.sampler)
    p.add_argument("--rate", type=float, default=None)  # None: up to CaptureOptions.rate_hz, adapted
    p.add_argument("--cprofile", action="store_true")
    add_switches(p, NOTEBOOK)
    p.add_argument("--max-rows", type=int, default=RUN_FOLDER_OPTIONS.max_rows)
    p.add_argument("--exports", choices=EXPORT_MODES, default=RUN_FOLDER_OPTIONS.exports)
    p.add_argument("--no-flame", action="store_true", help="show the summary only")
    p.add_argument("-q", "--quiet", action="store_true", help="show nothing (the run folder is still written)")
    return p


_TOKEN = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'[^']*'|\S+)""")
_VALUED = {"-o", "--output", "--sampler", "--rate", "--max-rows", "--exports"}


def split_line(line: str) -> tuple[list[str], str]:
    """Leading options and the statement after them (``%dynaprof -o d model(x)``)."""
    opts: list[str] = []
    pos = 0
    while True:
        m = _TOKEN.match(line, pos)
        if m is None or not m.group(1).startswith("-") or m.group(1) in ("-", "--"):
            if m is not None and m.group(1) == "--":
                pos = m.end()
            break
        tok = m.group(1)
        opts.append(tok)
        pos = m.end()
        if tok in _VALUED:
            v = _TOKEN.match(line, pos)
            if v is None:
                break
            opts.append(v.group(1))
            pos = v.end()
    return [t for o in opts for t in shlex.split(o)], line[pos:].strip()


def _cell_id(shell: Any) -> str | None:
    """The notebook cell's id where the front end sends it (JupyterLab, Notebook 7, VS Code)."""
    try:
        cid = shell.parent_header.get("metadata", {}).get("cellId")
    except Exception:
        return None
    if not isinstance(cid, str):
        return None
    return re.sub(r"[^A-Za-z0-9_-]", "", cid)[:12] or None


def make_profile(shell: Any, args: argparse.Namespace) -> Profile:
    if args.output is not None:
        out = Path(args.output).expanduser()
    else:
        cid = _cell_id(shell)
        out = Path(RUNS_DIR) / f"cell-{cid}" if cid else default_run_dir("cell")
    force = args.force
    if out.is_dir() and clear_previous_run(out):
        force = True  # re-running the cell: this run replaces the earlier one
    from dynaprof.model.capture_options import NOTEBOOK, switch_values

    chosen: dict[str, Any] = switch_values(vars(args), NOTEBOOK)
    return Profile(
        out, force=force, sampler=args.sampler, rate=args.rate, cprofile=args.cprofile, label="<notebook cell>",
        max_rows=args.max_rows, exports=args.exports, _option_hint="--force",
        **chosen,
    )


def flame_html(svg: str, title: str = "user code Dynamo traced") -> str:
    """The interactive flamegraph in its own document (an iframe), so its script runs and its ids
    and styles cannot clash with the notebook page."""
    m = re.search(r'<svg[^>]*\bheight="(\d+(?:\.\d+)?)"', svg)
    height = int(float(m.group(1))) + 8 if m else 400
    doc = f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">{svg}</body></html>'
    return (
        f'<iframe title="{html.escape(title)}" sandbox="allow-scripts" srcdoc="{html.escape(doc, quote=True)}" '
        f'style="width:100%;height:{height}px;border:0"></iframe>'
    )


def show(prof: Profile, flame: bool) -> None:
    display = importlib.import_module("IPython.display").display
    text = prof.summary()
    parts = [f'<pre style="white-space:pre;overflow-x:auto">{html.escape(text)}</pre>']
    run_dir = prof.run_dir
    svg_path = run_dir / "flame-traced.svg" if run_dir is not None else None
    if flame and svg_path is not None and svg_path.is_file() and prof.session.frames:
        parts.append(flame_html(svg_path.read_text(encoding="utf-8")))
    if run_dir is not None:
        parts.append(f"<p>dynaprof: wrote <code>{html.escape(str(run_dir))}/</code> "
                     f"(<code>report.html</code>, <code>session.json</code>, ...)</p>")
        text += f"dynaprof: wrote {run_dir}/\n"
    display({"text/plain": text, "text/html": "".join(parts)}, raw=True)


def _usage_error(message: str) -> BaseException:
    try:
        error: Any = importlib.import_module("IPython.core.error").UsageError
    except Exception:  # pragma: no cover - IPython is what calls us
        return ProfileError(message)
    exc: BaseException = error(message)
    return exc


class Magic:
    """``%dynaprof`` (line) and ``%%dynaprof`` (cell), bound to one shell."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def __call__(self, line: str, cell: str | None = None) -> Any:
        try:
            if cell is None:
                opts, code = split_line(line)
                if not code:
                    raise ProfileError(f"%{MAGIC}: nothing to run; use %{MAGIC} [options] STATEMENT, "
                                       f"or %%{MAGIC} [options] on a cell")
            else:
                opts, code = shlex.split(line), cell
            args = _parser().parse_args(opts)
            prof = make_profile(self.shell, args)
            prof.start()
        except (ProfileError, ValueError) as e:
            raise _usage_error(str(e)) from None
        reason = "exception"
        try:
            value = self._execute(code)
            reason = "exited"
        except KeyboardInterrupt:
            reason = "interrupted"
            raise
        finally:  # the profile is saved and shown whatever the cell did; its error then shows as usual
            prof._finish(reason)
            self.shell.user_ns["_dynaprof"] = prof
            if not args.quiet:
                try:
                    show(prof, not args.no_flame)
                except Exception as e:  # showing must not hide the cell's own outcome
                    print(f"dynaprof: cannot show the profile ({type(e).__name__}: {e}); see {prof.run_dir}/")
        return value

    def _execute(self, code: str) -> Any:
        """Run ``code`` in the user namespace as a cell runs (IPython's transforms; the value of a
        last expression is returned, so IPython shows it as the cell's output). Exceptions
        propagate, so the cell fails as it would without the magic."""
        shell = self.shell
        source = shell.transform_cell(code)
        try:
            filename = shell.compile.cache(source)  # tracebacks show the cell's lines
        except Exception:
            filename = "<dynaprof cell>"
        tree = shell.transform_ast(shell.compile.ast_parse(source, filename))
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        ns = shell.user_ns
        if tree.body:
            exec(shell.compile(tree, filename, "exec"), ns)
        if last is not None:
            return eval(shell.compile(last, filename, "eval"), ns)
        return None


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magic_function(Magic(ipython), magic_kind="line_cell", magic_name=MAGIC)


def unload_ipython_extension(ipython: Any) -> None:
    try:
        del ipython.magics_manager.magics["line"][MAGIC]
        del ipython.magics_manager.magics["cell"][MAGIC]
    except (AttributeError, KeyError):
        pass
