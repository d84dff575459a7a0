"""The session model: typed dataclasses, their JSON form, and atomic storage.

The names below load on first use: the ``dynaprof run`` child imports ``dynaprof.model.journal``
before the script runs, and everything it imports then sits ahead of the script's own modules
in ``sys.modules``, which pickle walks as Inductor writes its cache keys (``docs/performance.md``,
"Counted in instructions").
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing this package imports nothing more

#: the names ``dynaprof.model.store`` gives; every other one is ``dynaprof.model.session``'s
_STORE = ("load_session", "save_session")

__all__ = [
    "CATEGORIES",
    "CATEGORY_LABELS",
    "SCHEMA_VERSION",
    "Attempt",
    "CaptureInfo",
    "CompiledFrame",
    "ConfigChange",
    "Counterfactual",
    "FunctionRef",
    "GraphBreak",
    "GuardStats",
    "InlineStack",
    "Location",
    "PropertyTrace",
    "Repeat",
    "RunInfo",
    "Samples",
    "Session",
    "Span",
    "Stack",
    "load_session",
    "outermost_frames",
    "save_session",
]

if TYPE_CHECKING:
    from typing import Any

    from dynaprof.model.session import (
        CATEGORIES,
        CATEGORY_LABELS,
        SCHEMA_VERSION,
        Attempt,
        CaptureInfo,
        CompiledFrame,
        ConfigChange,
        Counterfactual,
        FunctionRef,
        GraphBreak,
        GuardStats,
        InlineStack,
        Location,
        PropertyTrace,
        Repeat,
        RunInfo,
        Samples,
        Session,
        Span,
        Stack,
        outermost_frames,
    )
    from dynaprof.model.store import load_session, save_session


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'dynaprof.model' has no attribute {name!r}")
    module = "dynaprof.model.store" if name in _STORE else "dynaprof.model.session"
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
