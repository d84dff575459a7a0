"""Where a run folder goes and how it is made ready: the default under ``./dynaprof-runs/``, and
a folder created or refused (a non-empty one) before anything is written into it. Used by every
entry point that writes a run or sweep folder (the CLI, ``dynaprof.profile()``, the notebook
magic); nothing here prints."""

from __future__ import annotations

import datetime
from pathlib import Path

from dynaprof.errors import DynaprofError

#: where ``run``, an imported TORCH_TRACE log and ``dynaprof.profile()`` put a run folder by default
RUNS_DIR = "dynaprof-runs"


def default_run_dir(stem: str) -> Path:
    """./dynaprof-runs/<script>-<timestamp>, made unique with a counter."""
    base = Path(RUNS_DIR) / f"{stem}-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def prepare_out_dir(
    path: Path, force: bool, hint: str = "--force", error: type[DynaprofError] = DynaprofError
) -> Path:
    """Create ``path``; refuse a non-empty existing folder unless ``force``. ``hint`` names the
    option that overrides it; ``error`` is what is raised (the API raises its own subclass)."""
    if path.exists() and not path.is_dir():
        raise error(f"{path} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise error(f"{path} is not empty; pass {hint} to write into it anyway")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise error(f"cannot create {path}: {e.strerror or e}") from e
    return path
