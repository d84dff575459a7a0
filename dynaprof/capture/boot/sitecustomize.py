"""The ``dynaprof run`` child's start: imported by the interpreter as ``sitecustomize``.

The launcher starts the child as ``python script.py args`` (or ``python -m module args``) with
this folder first on ``PYTHONPATH``, so the interpreter itself runs the script: the same
``sys.argv``, ``__main__``, ``sys.path`` and tracebacks, and the script's frames start where
plain ``python`` starts them. That last part matters for timing: CPython 3.11 keeps frames in
16 KiB chunks and unmaps a chunk as it empties, so moving the script a few frames deeper moved a
compile by +-8% (``benchmarks/bench_stack_base.py``).

Here, before the script: ``PYTHONPATH`` and ``sys.path`` are put back as the script would see
them, the ``sitecustomize`` this one shadowed (if any) is imported in its place, and the capture
starts (``dynaprof.capture.child.boot``).
"""

from __future__ import annotations

import os
import sys

#: set by the launcher: the PYTHONPATH the script must see (absent: it had none), and dynaprof's root
SAVED_PATH_ENV = "DYNAPROF_SAVED_PYTHONPATH"
ROOT_ENV = "DYNAPROF_ROOT"


def _restore_path() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    saved = os.environ.pop(SAVED_PATH_ENV, None)
    if saved is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = saved
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]


def _chain_sitecustomize() -> None:
    """Import the ``sitecustomize`` this module shadows, as the interpreter would have. Where
    there is none (or it fails), this module stays in ``sys.modules``: the import system takes
    the entry back out once this module has run, and a missing one would be an error."""
    me = sys.modules.pop("sitecustomize", None)
    try:
        import importlib

        importlib.import_module("sitecustomize")  # the next one on sys.path, now that ours is off it
    except ImportError as e:
        if e.name != "sitecustomize":
            _print_failure()
    except Exception:
        _print_failure()
    if "sitecustomize" not in sys.modules and me is not None:
        sys.modules["sitecustomize"] = me


def _print_failure() -> None:
    """What the interpreter prints of a failing ``sitecustomize`` (``site.execsitecustomize``)."""
    err = sys.exc_info()[1]
    print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(err).__name__}: {err}", file=sys.stderr)


def _start_capture() -> None:
    root = os.environ.pop(ROOT_ENV, None)
    added = root if root is not None and root not in sys.path else None
    if added is not None:
        sys.path.append(added)  # only to import dynaprof: its submodules load from its __path__ later
    try:
        from dynaprof.capture.child import boot
    finally:
        if added is not None:
            sys.path.remove(added)
    boot()


if __name__ == "sitecustomize":  # the child's interpreter; the launcher imports this for its names only
    _restore_path()
    _chain_sitecustomize()
    _start_capture()
