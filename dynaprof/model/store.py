"""Reading and writing session.json: atomic writes, schema checks, one-line errors."""

from __future__ import annotations

import gc
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from dynaprof.errors import DynaprofError, SessionError
from dynaprof.model.codec import DecodeError, from_json, to_json
from dynaprof.model.session import AXES_KEYS, SCHEMA_VERSION, Session, Stack

SESSION_FILE = "session.json"
#: rank folders inside a multi-rank run folder: rank-0, rank-1, ...
RANK_DIR_PREFIX = "rank-"


def rank_dir_name(rank: int) -> str:
    """The folder of one rank's run inside a multi-rank run folder: ``rank-3``."""
    return f"{RANK_DIR_PREFIX}{rank}"


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    Raises DynaprofError naming the path when the disk is full or the folder read-only."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as e:
        raise DynaprofError(f"cannot write {path}: {e.strerror or e}") from e


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _nest_axes(obj: dict[str, Any]) -> None:
    """In session.json the cause x phase view lives inside ``attribution`` (tools read it there)."""
    axes = obj.pop("axes", None)
    if isinstance(axes, dict) and isinstance(obj.get("attribution"), dict):
        obj["attribution"].update(axes)


def _unnest_axes(obj: Any) -> None:
    if not isinstance(obj, dict):
        return
    attr = obj.get("attribution")
    if isinstance(attr, dict) and any(isinstance(attr.get(k), dict) for k in AXES_KEYS):
        obj["axes"] = {k: attr.pop(k) for k in AXES_KEYS if k in attr}


def session_to_text(session: Session) -> str:
    data = to_json(session)
    _nest_axes(data)
    for frame in data.get("frames") or []:
        _nest_axes(frame)
    # compact: stacks are long integer lists, which indentation would put one per line
    return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"


def save_session(session: Session, run_dir: Path) -> Path:
    path = Path(run_dir) / SESSION_FILE
    atomic_write(path, session_to_text(session))
    return path


def resolve_session_path(path: Path) -> Path:
    path = Path(path)
    return path / SESSION_FILE if path.is_dir() else path


def load_session(path: Path) -> Session:
    """Load a session from a run folder or a session.json; SessionError on any problem."""
    file = resolve_session_path(path)
    return session_from_text(read_text(file), str(file))


def read_text(file: Path) -> str:
    """A stored file's text (session.json, sweep.json); SessionError (one line) when it cannot be read."""
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SessionError(f"{file}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SessionError(f"{file}: cannot read: {getattr(e, 'strerror', None) or e}") from None


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, as it was found afterwards. Loading or rendering a big
    session makes millions of objects that reference counting frees (or that live on); each
    collection meanwhile would walk all of them again (a quarter of a 100,000-stack report)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            _to_oldest()
            gc.enable()


def _to_oldest() -> None:
    """Move every object the collector tracks into its oldest generation, without looking at them.
    What was made while it was paused is all in the youngest, so the first collection after the
    pause walked every one of them (half a second after loading a big session) to find them
    alive. ``freeze`` then ``unfreeze`` moves them in one step; not where objects are frozen
    already (a pre-forking server's), whose ``unfreeze`` would thaw theirs too."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a number JSON allows")


def session_from_text(text: str, where: str = "session.json") -> Session:
    with collector_paused():
        return _session_from_text(text, where)


def _session_from_text(text: str, where: str) -> Session:
    try:
        data: Any = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise SessionError(f"{where}: not valid JSON (line {e.lineno}: {e.msg}); is the file truncated?") from None
    except RecursionError:
        raise SessionError(f"{where}: JSON nested too deeply") from None
    except ValueError as e:  # NaN/Infinity, or an integer too long to convert
        raise SessionError(f"{where}: not valid session JSON ({e})") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise SessionError(f"{where}: not a dynaprof session (no schema_version)")
    version = data["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionError(f"{where}: schema_version must be an integer")
    if version > SCHEMA_VERSION:
        raise SessionError(
            f"{where}: written by a newer dynaprof (schema {version}, this one reads up to "
            f"{SCHEMA_VERSION}); upgrade dynaprof to read it"
        )
    if version < 1:
        raise SessionError(f"{where}: unknown schema_version {version}")
    _unnest_axes(data)
    frames = data.get("frames")
    for frame in frames if isinstance(frames, list) else []:
        _unnest_axes(frame)
    try:
        session = from_json(Session, data)
    except DecodeError as e:
        raise SessionError(f"{where}: invalid session: {e}") from None
    except RecursionError:
        raise SessionError(f"{where}: invalid session: nested too deeply") from None
    _check_references(session, where)
    return session


def _in_range(stacks: list[Stack], n: int) -> bool:
    """Whether every stack's function indices are in range (compiler and traced: 0 .. n-1;
    spans and cause: -1 .. n-1), by the min and max of each list: one C call per list, none
    per index, and no list of all the indices is made."""
    funcs = [x for st in stacks for x in (st.compiler, st.traced) if x]
    spans = [st.spans for st in stacks if st.spans]
    causes = [st.cause for st in stacks]
    return (min(map(min, funcs), default=0) >= 0 and max(map(max, funcs), default=0) < n
            and min(map(min, spans), default=0) >= -1 and max(map(max, spans), default=-1) < n
            and min(causes, default=0) >= -1 and max(causes, default=-1) < n)


def _check_references(session: Session, where: str) -> None:
    """Indices into the function table must be in range, or renderers would crash later."""
    n = len(session.functions)
    stacks = session.samples.stacks if session.samples else []
    if _in_range(stacks, n):  # the usual case, checked at C speed; else the loop below names the stack
        stacks = []
    for i, st in enumerate(stacks):
        for idx in (*st.compiler, *st.traced):
            if not 0 <= idx < n:
                raise SessionError(
                    f"{where}: invalid session: samples.stacks[{i}] refers to function {idx}, table has {n}"
                )
        for idx in (*st.spans, st.cause):
            if not -1 <= idx < n:
                raise SessionError(
                    f"{where}: invalid session: samples.stacks[{i}] refers to function {idx}, table has {n}"
                )
    for i, ins in enumerate(session.inline_profile or []):
        for idx in ins.path:
            if not 0 <= idx < n:
                raise SessionError(
                    f"{where}: invalid session: inline_profile[{i}] refers to function {idx}, table has {n}"
                )


_Doc = TypeVar("_Doc")


def save_document(doc: object, folder: Path, file_name: str) -> Path:
    """A versioned document beside the runs (``sweep.json``, ``suite.json``), indented for reading."""
    path = Path(folder) / file_name
    atomic_write(path, json.dumps(to_json(doc), ensure_ascii=False, allow_nan=False, indent=1) + "\n")
    return path


def is_document(path: Path, file_name: str) -> bool:
    """Whether ``path`` is a folder holding ``file_name``, or that file."""
    path = Path(path)
    return (path.is_dir() and (path / file_name).is_file()) or (path.is_file() and path.name == file_name)


def load_document(cls: type[_Doc], path: Path, file_name: str, what: str, newest: int) -> tuple[_Doc, Path]:
    """A versioned document (``what``: "sweep", "suite") from its folder or file, and that file;
    SessionError (one line) on any problem, a newer schema than ``newest`` included."""
    file = Path(path) / file_name if Path(path).is_dir() else Path(path)
    text = read_text(file)
    try:
        data: Any = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as e:
        raise SessionError(f"{file}: not valid JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("schema_version"), int):
        raise SessionError(f"{file}: not a dynaprof {what} (no schema_version)")
    if data["schema_version"] > newest:
        raise SessionError(f"{file}: written by a newer dynaprof ({what} schema {data['schema_version']}, this one "
                           f"reads up to {newest}); upgrade dynaprof to read it")
    try:
        return from_json(cls, data), file
    except DecodeError as e:
        raise SessionError(f"{file}: invalid {what}: {e}") from None
    except RecursionError:
        raise SessionError(f"{file}: invalid {what}: nested too deeply") from None
