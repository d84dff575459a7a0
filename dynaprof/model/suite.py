"""A suite (``dynaprof suite``): a model zoo, each entry a script run K times, each run a fresh
``dynaprof run`` whose folder is kept at ``NAME/K``; or a dashboard's CSV read in
(``ingest.harness_csv``), a suite of compile times without causes.

``suite.json`` is this model through ``model.codec``, versioned like ``session.json``. It keeps
facts: each run's measures (``model.sweep``'s keys: ``total``, ``cause:...``, ``group:...``,
``restart_waste``), its exact counts, the seconds of each kind of cause (``CAUSE_KINDS``), or its
error; rewritten after every run, so Ctrl-C or a lost worker keeps what finished and ``--resume``
runs only what is missing. Times are seconds; a measure missing from a run was absent (never 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynaprof.errors import DynaprofError
from dynaprof.model.store import is_document, load_document, save_document

SUITE_FILE = "suite.json"
#: Bump when a change would make an older dynaprof misread a suite.
SUITE_SCHEMA_VERSION = 1
SUITE_SCHEMA_HISTORY = {1: "first version"}

#: where a suite's runs came from
ORIGIN_DYNAPROF = "dynaprof"
#: PyTorch's dynamo benchmark harness CSVs: compile times, no causes
ORIGIN_HARNESS = "harness"

#: the kinds of cause a suite sums over its models, each sampled second in exactly one
#: (``analysis.suite_facts.cause_kinds`` gives the rule), in the order reports list them
CAUSE_KINDS: dict[str, str] = {
    "parametrization": "parametrization",
    "graph_breaks": "graph breaks",
    "recompiles": "recompiles",
    "restart_waste": "restart waste",
    "toolchain": "toolchain setup",
    "collector": "the collector",
    "user_code": "user code",
    "unattributed": "no provenance",
}

#: counts a suite's reports list per model (``model.sweep.COUNT_LABELS`` and these)
SUITE_COUNTS: dict[str, str] = {
    "restarts": "restarts",
    "recompiles": "recompiles",
    "graph_breaks": "graph breaks",
    "guards": "guards",
    "kernels": "kernels",
    "failures": "failed compiles",
}

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class SuiteEntry:
    """One model: a script and its arguments, run with ``env`` set, from ``cwd`` (None: the suite's)."""

    name: str
    script: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


@dataclass
class SuiteRun:
    """One run of one entry (a fresh ``dynaprof run`` process), or one row of a dashboard CSV."""

    entry: str
    repeat: int  # 1-based
    run_dir: str  # relative to the suite folder; "" for a CSV row
    exit_status: int | None  # None: the engine lost it
    error: str | None = None
    wall_s: float | None = None
    #: 2 when the first attempt died and it ran again (``retried_because`` says why)
    attempts: int = 1
    retried_because: str | None = None
    host: str | None = None
    measures: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    #: ``CAUSE_KINDS`` key -> sampled seconds (> 0 only)
    kinds: dict[str, float] = field(default_factory=dict)
    #: the run's cause table as its first screen rolls it up (``analysis.rollup``): row -> seconds,
    #: largest first, "other causes" left out
    causes: dict[str, float] = field(default_factory=dict)
    #: the dashboard's figures for this model (a CSV row's other columns), for a side-by-side view
    harness: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.exit_status == 0


@dataclass
class Suite:
    schema_version: int
    source: str  # the suite file or folder (or the CSV) as given
    origin: str  # ORIGIN_DYNAPROF or ORIGIN_HARNESS
    entries: list[SuiteEntry]
    repeat: int
    cold: bool
    executor: str
    workers: int
    command: list[str]
    start_time: str
    torch_version: str | None = None
    dynaprof_version: str | None = None
    runs: list[SuiteRun] = field(default_factory=list)
    #: Ctrl-C stopped it: the runs listed are those that came back
    interrupted: bool = False
    #: what the executor said about how the runs ran (parallel runs slow each other...)
    notes: list[str] = field(default_factory=list)
    #: options given to every ``dynaprof run`` (``--sampler`` ...), kept so ``--resume`` runs the same
    run_options: list[str] = field(default_factory=list)

    def runs_of(self, name: str) -> list[SuiteRun]:
        return [r for r in self.runs if r.entry == name]

    def finished(self, name: str, repeat: int) -> bool:
        return any(r.ok for r in self.runs if r.entry == name and r.repeat == repeat)


def run_key(name: str, repeat: int) -> str:
    """``NAME/K``: a run's folder under the suite folder."""
    return f"{name}/{repeat}"


def check_names(entries: list[SuiteEntry]) -> None:
    """DynaprofError unless every entry has a file-safe name of its own."""
    seen: set[str] = set()
    for e in entries:
        if not _NAME.match(e.name):
            raise DynaprofError(f"suite entry {e.name!r}: a name is letters, digits, '.', '_' and '-' (it names a "
                                "folder)")
        if e.name in seen:
            raise DynaprofError(f"suite entry {e.name!r} is there twice: each name once")
        seen.add(e.name)
    if not entries:
        raise DynaprofError("the suite has no entry")


def _toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
        except ImportError:
            raise DynaprofError("reading a TOML suite on Python 3.10 needs tomli: pip install tomli") from None
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise DynaprofError(f"{path}: cannot read it: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise DynaprofError(f"{path}: not valid TOML: {e}") from None
    return data


def _entry(raw: object, where: Path, i: int) -> SuiteEntry:
    if not isinstance(raw, dict) or not isinstance(raw.get("script"), str):
        raise DynaprofError(f"{where}: [[entry]] {i} needs script = \"path.py\"")
    args = raw.get("args", [])
    if isinstance(args, str):
        args = args.split()
    env = raw.get("env", {})
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        raise DynaprofError(f"{where}: [[entry]] {i}: args is a list of strings")
    if not isinstance(env, dict):
        raise DynaprofError(f"{where}: [[entry]] {i}: env is a table of NAME = \"value\"")
    script = (where.parent / raw["script"]).resolve() if not Path(raw["script"]).is_absolute() else Path(raw["script"])
    cwd = raw.get("cwd")
    name = raw.get("name", script.stem)
    return SuiteEntry(str(name), str(script), [str(a) for a in args], {str(k): str(v) for k, v in env.items()},
                      str((where.parent / cwd).resolve()) if isinstance(cwd, str) else None)


def load_entries(path: Path) -> list[SuiteEntry]:
    """A suite's entries: a TOML file's ``[[entry]]`` tables (name, script, args, env, cwd; paths
    relative to the file), or every ``*.py`` of a folder (named by its stem)."""
    path = Path(path)
    if path.is_dir():
        entries = [SuiteEntry(p.stem, str(p.resolve())) for p in sorted(path.glob("*.py"))]
    elif path.is_file():
        raw = _toml(path).get("entry", [])
        if not isinstance(raw, list):
            raise DynaprofError(f"{path}: expected [[entry]] tables")
        entries = [_entry(r, path, i) for i, r in enumerate(raw, 1)]
    else:
        raise DynaprofError(f"{path}: no such suite file or folder")
    check_names(entries)
    for e in entries:
        if not Path(e.script).is_file():
            raise DynaprofError(f"suite entry {e.name!r}: can't open file {e.script!r}: no such file")
    return entries


def save_suite(suite: Suite, folder: Path) -> Path:
    return save_document(suite, folder, SUITE_FILE)


def is_suite(path: Path) -> bool:
    """Whether ``path`` is a suite folder or its suite.json."""
    return is_document(path, SUITE_FILE)


def load_suite(path: Path) -> Suite:
    """A suite from its folder or suite.json; SessionError (one line) on any problem."""
    return load_document(Suite, path, SUITE_FILE, "suite", SUITE_SCHEMA_VERSION)[0]
