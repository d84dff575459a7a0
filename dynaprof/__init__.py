"""dynaprof: profile where torch.compile spends its compile time.

The public Python surface (docs/python-api.md), loaded on first use so that ``import dynaprof``
and the CLI's start-up import nothing extra:

* ``profile`` / ``Profile`` / ``ProfileError``: profile the compiles of a block in this process;
* ``Session`` and ``load_session``: the typed session and reading a run folder or session.json;
* ``Budget``, ``check_budgets``, ``CheckResult``: the budgets ``dynaprof check`` applies;
* ``findings``, ``compare_sessions``: what the reports say, and a comparison of two runs;
* ``sweep`` / ``SweepResult``: how compile time grows with size (``dynaprof sweep`` in this process).

``%load_ext dynaprof`` registers the ``%%dynaprof`` notebook magic (``dynaprof.notebook``).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: `import dynaprof` does not import typing

#: public name -> (module, attribute)
_EXPORTS: dict[str, tuple[str, str]] = {
    "__version__": ("dynaprof.version", "__version__"),
    "profile": ("dynaprof.api", "profile"),
    "Profile": ("dynaprof.api", "Profile"),
    "ProfileError": ("dynaprof.api", "ProfileError"),
    "DynaprofError": ("dynaprof.errors", "DynaprofError"),
    "Session": ("dynaprof.model.session", "Session"),
    "load_session": ("dynaprof.api", "load_session"),
    "sweep": ("dynaprof.api", "sweep"),
    "SweepResult": ("dynaprof.api", "SweepResult"),
    "Budget": ("dynaprof.analysis.budgets", "Budget"),
    "CheckResult": ("dynaprof.analysis.budgets", "CheckResult"),
    "check_budgets": ("dynaprof.analysis.budgets", "check"),
    "findings": ("dynaprof.analysis.findings", "findings"),
    "compare_sessions": ("dynaprof.analysis.compare", "compare_sessions"),
}

__all__ = [
    "Budget",
    "CheckResult",
    "DynaprofError",
    "Profile",
    "ProfileError",
    "Session",
    "SweepResult",
    "__version__",
    "check_budgets",
    "compare_sessions",
    "findings",
    "load_ipython_extension",
    "load_session",
    "profile",
    "sweep",
]

if TYPE_CHECKING:
    from typing import Any

    from dynaprof.analysis.budgets import Budget, CheckResult
    from dynaprof.analysis.budgets import check as check_budgets
    from dynaprof.analysis.compare import compare_sessions
    from dynaprof.analysis.findings import findings
    from dynaprof.api import Profile, ProfileError, SweepResult, load_session, profile, sweep
    from dynaprof.errors import DynaprofError
    from dynaprof.model.session import Session
    from dynaprof.version import __version__


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'dynaprof' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext dynaprof``: register the ``%%dynaprof`` cell magic and ``%dynaprof`` line magic."""
    from dynaprof.notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from dynaprof.notebook import unload_ipython_extension as unload

    unload(ipython)
