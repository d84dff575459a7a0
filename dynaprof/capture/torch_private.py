"""The one way into torch's private modules, and what torch says of its own version."""

from __future__ import annotations

import importlib
import sys
from typing import Any


def _private(module: str) -> Any:
    """Import a torch-internal module, typed as Any: these APIs are private and move. Every
    caller guards its use (a moved name is a warning naming the torch version, never an error)."""
    return importlib.import_module(module)


def torch_version() -> str:
    """``torch.__version__`` of the imported torch ("?" before it is imported)."""
    torch = sys.modules.get("torch")
    return str(getattr(torch, "__version__", "?"))


def torch_git_version() -> str | None:
    """``torch.version.git_version``, the commit torch was built from (None where it is missing)."""
    version = getattr(sys.modules.get("torch"), "version", None)
    git = getattr(version, "git_version", None)
    return git if isinstance(git, str) and git and git != "Unknown" else None
