"""The session model: typed dataclasses, their JSON form, and atomic storage.

The names below load on first use: the ``dynaprof run`` child imports ``dynaprof.model.journal``
before the script runs, and everything it imports then sits ahead of the script's own modules
in ``sys.modules``, which Inductor scans on every cache-key pickle (``docs/performance.md``,
"Counted in instructions").
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing this package imports nothing more

#: public name -> module
_EXPORTS: dict[str, str] = {
    "CATEGORIES": "dynaprof.model.session",
    "CATEGORY_LABELS": "dynaprof.model.session",
    "SCHEMA_VERSION": "dynaprof.model.session",
    "Attempt": "dynaprof.model.session",
    "CaptureInfo": "dynaprof.model.session",
    "CompiledFrame": "dynaprof.model.session",
    "ConfigChange": "dynaprof.model.session",
    "Counterfactual": "dynaprof.model.session",
    "FunctionRef": "dynaprof.model.session",
    "GraphBreak": "dynaprof.model.session",
    "GuardStats": "dynaprof.model.session",
    "InlineStack": "dynaprof.model.session",
    "Location": "dynaprof.model.session",
    "PropertyTrace": "dynaprof.model.session",
    "Repeat": "dynaprof.model.session",
    "RunInfo": "dynaprof.model.session",
    "Samples": "dynaprof.model.session",
    "Session": "dynaprof.model.session",
    "Span": "dynaprof.model.session",
    "Stack": "dynaprof.model.session",
    "outermost_frames": "dynaprof.model.session",
    "load_session": "dynaprof.model.store",
    "save_session": "dynaprof.model.store",
}

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
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dynaprof.model' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
