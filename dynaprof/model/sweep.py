"""Sweeps seen from the model (``dynaprof sweep``): one script run at several sizes, each point and repeat a run
folder of its own, and the measures of each run the growth fit reads (``analysis.growth``).

``sweep.json`` is this model through ``model.codec``, versioned like ``session.json``. It keeps
facts (each run's measures and exact counts, or its error) and, for readers outside dynaprof, the
growth fits made from them when it was written (``fits``: derived, made again by every command
that reads the sweep, by today's rules). Times are seconds; a measure missing from a run's
``measures`` was absent from that run (never stored as 0).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from dynaprof.errors import DynaprofError, SessionError
from dynaprof.model.store import is_document, load_document, save_document

SWEEP_FILE = "sweep.json"
#: Bump when a change would make an older dynaprof misread a sweep.
SWEEP_SCHEMA_VERSION = 2
SWEEP_SCHEMA_HISTORY = {1: "first version", 2: "cause_files: small causes roll up as in the cause table"}

#: measure keys: ``total`` (total compile time), ``cause:<cause>`` (the cause x phase table's rows),
#: ``group:<phase group>`` (its columns), ``restart_waste``; counts are keyed by ``COUNT_LABELS``
TOTAL = "total"
RESTART_WASTE = "restart_waste"
CAUSE_PREFIX = "cause:"
GROUP_PREFIX = "group:"

#: exact counts of a run (summed over its frames), in the order reports list them
COUNT_LABELS: dict[str, str] = {
    "guards": "guards",
    "fx_nodes": "FX nodes",
    "instructions": "bytecode instructions traced",
    "inlined_calls": "inlined calls",
    "inlined_calls_discarded": "inlined calls restarts threw away",
    "inlined_calls_all": "inlined calls, kept and thrown away",
    "restarts": "restarts",
    "recompiles": "recompiles",
    "kernels": "Inductor kernels",
    "aot_ops": "ops after AOT",
}


@dataclass
class SweepParam:
    """One ``--param NAME=V1,V2,...``: the environment variable set, and ``{NAME}`` in the arguments."""

    name: str
    values: list[str]


@dataclass
class PointRun:
    """One run of one point (a fresh ``dynaprof run`` process)."""

    repeat: int  # 1-based
    run_dir: str  # relative to the sweep folder
    exit_status: int | None
    #: why the run gives no measures (or what went wrong in it); None when it ran and was read
    error: str | None = None
    wall_s: float | None = None
    #: measure key (``TOTAL``, ``cause:...``, ``group:...``, ``RESTART_WASTE``) -> seconds, > 0
    measures: dict[str, float] = field(default_factory=dict)
    #: ``COUNT_LABELS`` key -> exact count; a count the run's torch did not expose is left out
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.exit_status == 0


@dataclass
class SweepPoint:
    """One point: the value of every parameter (as typed) and its runs."""

    values: dict[str, str]
    x: float  # the first parameter's value: the size the growth is fitted against
    runs: list[PointRun] = field(default_factory=list)


@dataclass
class GrowthFit:
    """One fitted exponent as ``sweep.json`` gives it to outside readers (``analysis.growth.Fit``)."""

    measure: str
    kind: str  # ``time`` or ``count``
    exponent: float | None
    low: float | None
    high: float | None
    residual: float | None
    points: int  # points the fit used
    absent_at: list[float] = field(default_factory=list)


@dataclass
class Sweep:
    schema_version: int
    params: list[SweepParam]
    target: str
    args: list[str]  # the script's arguments with ``{NAME}`` unreplaced
    command: list[str]
    repeat: int
    cold: bool
    start_time: str
    torch_version: str | None = None
    dynaprof_version: str | None = None
    points: list[SweepPoint] = field(default_factory=list)
    #: Ctrl-C stopped it: the points listed are those that finished
    interrupted: bool = False
    #: ``--project NAME=V``: the size the reports project each cost to; None: none asked
    project_at: float | None = None
    fits: list[GrowthFit] = field(default_factory=list)
    #: each cause's file at the largest point (``analysis.cause_table.cause_files``): what the growth
    #: rolls small causes up along, as every cause table does; empty in sweeps from before
    cause_files: dict[str, str] = field(default_factory=dict)

    @property
    def axis(self) -> str:
        """The parameter the growth is fitted against (the first one)."""
        return self.params[0].name if self.params else "N"


# -- a sweep's sizes and its points' folders (the CLI's --param and dynaprof.sweep() alike) ------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def size_of(value: str, name: str) -> float:
    """The first parameter's value as a positive number (its logarithm is fitted)."""
    try:
        x = float(value)
    except ValueError:
        raise DynaprofError(f"--param {name}: {value!r} is not a number (the first --param is the size the "
                            "growth is fitted against)") from None
    if not x > 0 or math.isinf(x):
        raise DynaprofError(f"--param {name}: {value!r} must be a positive number (log-log fit)")
    return x


def check_params(params: list[SweepParam]) -> None:
    """DynaprofError unless the params make a sweep: one or more, each name once, as many values each,
    the first one's at least two different positive numbers."""
    if not params:
        raise DynaprofError("give at least one --param NAME=V1,V2,... (the size to sweep)")
    names = [p.name for p in params]
    if len(set(names)) < len(names):
        raise DynaprofError("each --param NAME once")
    n = len(params[0].values)
    if any(len(p.values) != n for p in params):
        raise DynaprofError("several --param vary together, point by point: give each the same number of values")
    xs = [size_of(v, params[0].name) for v in params[0].values]
    if len(set(xs)) < 2:
        raise DynaprofError(f"--param {params[0].name}: a growth needs at least two different sizes")


def point_dir(values: dict[str, str]) -> str:
    """``LAYERS-8`` (``LAYERS-8_WIDTH-64`` for several): a file-safe folder name for a point."""
    return "_".join(f"{k}-{_UNSAFE.sub('_', v).strip('._') or 'x'}" for k, v in values.items())


def save_sweep(sweep: Sweep, folder: Path) -> Path:
    return save_document(sweep, folder, SWEEP_FILE)


def is_sweep(path: Path) -> bool:
    """Whether ``path`` is a sweep folder or its sweep.json."""
    return is_document(path, SWEEP_FILE)


def load_sweep(path: Path) -> Sweep:
    """A sweep from its folder or sweep.json; SessionError (one line) on any problem."""
    sweep, file = load_document(Sweep, path, SWEEP_FILE, "sweep", SWEEP_SCHEMA_VERSION)
    if not sweep.params:
        raise SessionError(f"{file}: invalid sweep: no parameter")
    return sweep
