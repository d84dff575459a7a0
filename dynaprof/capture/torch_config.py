"""The compiler settings a run changed: every setting of torch's imported compiler config modules
that differs from its default, read once at the end through each module's entries (2.6+:
``_config`` entries and ``_is_default``; 2.4/2.5: the ``_config`` and ``_default`` value dicts)."""

from __future__ import annotations

import sys
import warnings
from typing import Any

from dynaprof.capture.torch_private import torch_version

#: the compiler config modules whose changed settings are recorded: (short name, module)
CONFIG_MODULES = (("dynamo", "torch._dynamo.config"), ("inductor", "torch._inductor.config"),
                  ("functorch", "torch._functorch.config"))
#: the longest repr kept of a setting's value or default
MAX_CONFIG_REPR = 200
_NO_DEFAULT = object()


def _config_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= MAX_CONFIG_REPR else text[:MAX_CONFIG_REPR] + "..."


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _module_changes(short: str, mod: Any) -> list[list[str]]:
    """One config module's settings that differ from their defaults, sorted by name."""
    entries = getattr(mod, "_config", None)
    if not isinstance(entries, dict):
        raise AttributeError("no _config table")
    out: list[list[str]] = []
    if hasattr(mod, "_is_default"):  # 2.6+: _ConfigEntry objects (the env-set ones count as changed)
        for key in sorted(entries):
            entry = entries[key]
            if getattr(entry, "hide", False) or getattr(entry, "alias", None) or mod._is_default(key):
                continue
            value, default = getattr(mod, key), getattr(entry, "default", _NO_DEFAULT)
            if default is not _NO_DEFAULT and _same(value, default):
                continue
            out.append([short, key, _config_repr(value), "?" if default is _NO_DEFAULT else _config_repr(default)])
        return out
    defaults = getattr(mod, "_default", None)  # 2.4/2.5: values in _config, defaults in _default
    if not isinstance(defaults, dict):
        raise AttributeError("no _default table")
    for key in sorted(entries):
        value, default = entries[key], defaults.get(key, _NO_DEFAULT)
        if default is _NO_DEFAULT or not _same(value, default):
            out.append([short, key, _config_repr(value), "?" if default is _NO_DEFAULT else _config_repr(default)])
    return out


def config_changes(skip: frozenset[tuple[str, str]] = frozenset()) -> tuple[list[list[str]], list[str]]:
    """``[module, name, value, default]`` for every setting of the imported compiler config modules
    that differs from its default (``skip``: the ones dynaprof set itself), and a note per module
    that could not be read. A module never imported is left out: its settings are the defaults,
    less what environment variables change (recorded beside it)."""
    changes: list[list[str]] = []
    errors: list[str] = []
    for short, name in CONFIG_MODULES:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        try:
            with warnings.catch_warnings():  # reading a deprecated setting warns
                warnings.simplefilter("ignore")
                changes += [c for c in _module_changes(short, mod) if (c[0], c[1]) not in skip]
        except Exception as e:
            errors.append(f"{short} config not read on torch {torch_version()} ({type(e).__name__}: {e})"[:300])
    return changes, errors
