"""Cache lookups seen from ingest: a session's (``Session.cache_keys``), from a journal or a TORCH_TRACE log.

Both importers call this module: the journal's ``key_part`` / ``cache_lookup`` records
(``JournalLookups``), a log's ``fx_graph_cache_*`` / ``aotautograd_cache_*`` artifacts, whose
payload is torch's cache info with the key's components (``TraceLookups``). Both add Dynamo's
in-memory cache from the frames themselves (``dynamo_lookups``): a compile is Dynamo's miss (a
hit never reaches Python), its reason the guard failures torch gives, or none for a first compile.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from dynaprof.ingest import kernel_split
from dynaprof.ingest.kernel_waits import KernelWait
from dynaprof.model.cache import marker
from dynaprof.model.cache_keys import (
    KERNEL_CACHES,
    CacheKeys,
    CacheLookupRecord,
    ComponentTable,
    KeyComponent,
    KeyPart,
    ParsedLookup,
    cut,
    lookup_from_info,
    read_lookup,
)
from dynaprof.model.journal import Kernel
from dynaprof.model.session import CompiledFrame

FIRST_COMPILE = "first compile of this code: no cache entry yet"
#: said once for a log whose compiles reached Inductor's caches (torch logs no outcome per kernel)
KERNEL_NOTE = ("the log holds no kernel code cache lookups: torch logs no hit or miss per kernel "
               "(dynaprof run records them live)")


def _code_key(f: CompiledFrame) -> str:
    return cut(f"{f.name} {f.filename}:{f.lineno}")


def dynamo_lookups(frames: list[CompiledFrame]) -> list[tuple[str, ParsedLookup]]:
    """One Dynamo miss per Dynamo frame compile: ``compile_id`` ``F/0`` is a code's first compile,
    ``F/N`` a recompile (its reason: why each cached entry's guards failed, where torch says)."""
    out: list[tuple[str, ParsedLookup]] = []
    for f in frames:
        if f.kind != "forward" or f.compile_id.startswith("!"):
            continue
        part = f.compile_id.split("/")
        first = len(part) >= 2 and part[1] == "0"
        # torch lists each cached entry's guard failure on a line of its own
        failures = "; ".join(x.strip() for x in (f.recompile_reason or "").splitlines() if x.strip())
        reason = FIRST_COMPILE if first else (failures or "a recompile: its cached entries' guards failed")
        out.append((f.key, ParsedLookup("dynamo", "miss", cut(reason, 500), _code_key(f))))
    return out


def _finish(lookups: list[tuple[str, ParsedLookup]], frames: list[CompiledFrame]) -> CacheKeys:
    table = ComponentTable()
    known = {f.key for f in frames}
    by_frame: dict[str, list[ParsedLookup]] = {}
    for key, lk in dynamo_lookups(frames) + lookups:
        by_frame.setdefault(key, []).append(lk)
    for f in frames:  # in the frames' order, each frame's lookups in the order torch made them
        for lk in by_frame.pop(f.key, []):
            table.add(f.key, lk)
    for key, rest in by_frame.items():  # lookups of a frame the session lacks: kept, not lost
        if key not in known:
            for lk in rest:
                table.add(key, lk)
    return table.keys


class JournalLookups:
    """Collects a journal's ``key_part`` and ``cache_lookup`` records."""

    def __init__(self) -> None:
        self.parts: dict[int, KeyComponent] = {}
        self.lookups: list[tuple[str, ParsedLookup]] = []

    def key_part(self, r: KeyPart) -> None:
        items = r.get("items")
        for item in items if isinstance(items, list) else []:
            if not (isinstance(item, list) and len(item) == 4):
                continue
            i, name, h, value = item
            if isinstance(i, int) and isinstance(name, str) and isinstance(h, str):
                self.parts[i] = KeyComponent(name, h, cut(value if isinstance(value, str) else ""))

    def lookup(self, r: CacheLookupRecord) -> None:
        def resolve(ids: Any) -> list[KeyComponent]:
            if not isinstance(ids, list):
                return []
            return [self.parts[i] for i in ids if isinstance(i, int) and i in self.parts]

        got = read_lookup(r, resolve)  # every fact of the record, as ``model.cache_keys.LOOKUP_FACTS`` says
        if got is not None:
            self.lookups.append(got)

    def finish(self, frames: list[CompiledFrame], kernels: Iterable[Kernel] = (),
               waits: Iterable[KernelWait] = ()) -> CacheKeys:  # fmt: skip
        """The session's lookups; a kernel miss gets the build seconds its worker measured (the
        ``kernel`` and ``kernel_wait`` records: a kernel's cause id, and each wait's measured
        seconds per cause), where one miss of that name in that compile makes the join unambiguous."""
        built = build_seconds(kernels, waits)
        misses: dict[tuple[str, str], int] = {}
        for key, lk in self.lookups:
            if lk.cache in KERNEL_CACHES and lk.outcome == "miss" and lk.kernel:
                misses[(key, lk.kernel)] = misses.get((key, lk.kernel), 0) + 1
        for key, lk in self.lookups:
            if lk.kernel and lk.outcome == "miss" and misses.get((key, lk.kernel)) == 1:
                s = built.get((key, lk.kernel))
                lk.built_s = round(s, 6) if s else None  # 0: nothing measured (a hit's), not a build
        return _finish(self.lookups, frames)


def build_seconds(kernels: Iterable[Kernel], waits: Iterable[KernelWait]) -> dict[tuple[str, str], float]:
    """(frame key, kernel name) -> the build seconds its compile workers measured
    (``kernel_split.build_seconds``); only for a cause that names one kernel of its compile."""
    kernels = list(kernels)
    names: dict[int, tuple[str, str] | None] = {}
    for k in kernels:
        names[k["cause"]] = (k["key"], k["name"]) if k["cause"] not in names else None  # a shared cause: ambiguous
    measured = kernel_split.build_seconds(kernels, list(waits), {})
    return {kn: s for cause, s in measured.items() if (kn := names.get(cause)) is not None}


class _Artifact:
    """Reads one cache artifact's payload (torch's cache info as JSON) into a lookup."""

    def __init__(self, into: TraceLookups, frame: object, name: str) -> None:
        self.into, self.frame, self.name = into, frame, name
        self.chunks: list[bytes] = []
        self.size = 0

    def feed(self, lines: list[bytes]) -> None:
        if self.size <= 64 << 20:  # a log's payload is ~100 KB; a runaway one is dropped, not held
            self.chunks.extend(lines)
            self.size += sum(map(len, lines))

    def done(self) -> None:
        m = marker(self.name)
        if m is None:
            if self.name == "fx_graph_cache_hash":
                self.into.keys_only += 1
            return
        try:
            info = json.loads(b"".join(self.chunks).decode("utf-8", "replace")) if self.chunks else {}
        except (ValueError, RecursionError):
            info = {}
        lk = lookup_from_info(m[0], info if isinstance(info, dict) else {}, m[1])
        if lk is not None:
            self.into.found.append((self.frame, lk))


class TraceLookups:
    """Collects a TORCH_TRACE log's cache artifacts, per frame accumulator, until the frames have keys."""

    def __init__(self) -> None:
        self.found: list[tuple[object, ParsedLookup]] = []
        self.keys_only = 0  # torch 2.4's ``fx_graph_cache_hash`` artifacts: a key, no outcome

    def warnings(self) -> list[str]:
        """What the log could not say of its caches (once per session)."""
        out: list[str] = []
        if self.keys_only and not any(lk.cache == "fx_graph" for _, lk in self.found):
            out.append(f"the log holds {self.keys_only} FX graph cache key(s) (fx_graph_cache_hash, torch 2.4) "
                       "without their outcome (2.4 counts hits and misses but does not log them): no FX graph "
                       "cache lookups read")  # fmt: skip
        if self.keys_only or self.found:  # an Inductor compile reached its caches: it had kernels to look up
            out.append(KERNEL_NOTE)
        return out

    def artifact(self, frame: object, name: str) -> _Artifact:
        """The payload handler of the artifact ``name`` of ``frame`` (the importer's accumulator)."""
        return _Artifact(self, frame, name)

    def finish(self, key_of: Mapping[int, str], frames: list[CompiledFrame]) -> CacheKeys:
        """``key_of``: ``id(accumulator)`` -> the key its frame was given."""
        lookups = [(key_of[id(acc)], lk) for acc, lk in self.found if id(acc) in key_of]
        return _finish(lookups, frames)
