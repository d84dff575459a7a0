"""Cache lookups seen from the model: per compile, each cache a compile touched and its key's components.

Pure, and one home for reading torch's cache info, whichever way it reaches dynaprof: the live
capture (``capture.cache_keys``) and a TORCH_TRACE log's ``fx_graph_cache_*`` /
``aotautograd_cache_*`` artifacts (``ingest.cache_keys``) both hand the same dict to
``lookup_from_info``. Torch's key components are ``FxGraphCachePickler.debug_lines``: one line
``[hash] name: value`` per part of the key (each Inductor config key, each input's metadata, the
graph module's code, the torch version, ...). Values are kept cut to ``VALUE_CHARS``; the graph's
code is also split into one hash per node (``graph_nodes``) so the first node that differs can be
named. A session holds every distinct component once (``CacheKeys.components``) and each lookup
lists indices into it: a run's lookups share almost all their config components.

Every cache fact is declared here, once: the caches (``CACHES``: a label, whether their lookups
carry key components, their marker and artifact names, the CompilationMetrics counters that count
them), the optional facts of a lookup (``LOOKUP_FACTS``: the ``CacheLookup`` attribute, its key in a
``cache_lookup`` record, how a journal value is read, the journal schema that added it), and the
journal records that carry them (``CacheLookupRecord``, ``KeyPart``). The capture writes a lookup
with ``lookup_record``, the journal importer reads it back with ``read_lookup``, the TORCH_TRACE
importer picks artifacts by ``ARTIFACT_PREFIXES`` and ``model.cache`` counts markers by ``marker``;
none of them names a cache or a lookup fact. A new cache fact is its capture hook, its row here
(a new lookup fact also its field in ``ParsedLookup``, ``CacheLookup`` and ``CacheLookupRecord``,
and ``since`` one above ``model.journal.JOURNAL_SCHEMA``, which follows), and its renderer
(``tests/unit/test_cache_facts.py``).
"""

# No ``from __future__ import annotations``: the journal records below are ``TypedDict``s, and
# Python 3.11's cannot see ``NotRequired`` in a string annotation (``model.journal``).

import dataclasses
import functools
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from dynaprof.fmt import one_line, stored_s

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover - Python 3.10 (typing_extensions comes with torch)
    from typing_extensions import NotRequired, TypedDict


@dataclass(frozen=True)
class Cache:
    """One cache whose lookups dynaprof records: what every layer needs to know of it."""

    name: str  # ``CacheLookup.cache``, ``CompiledFrame.cache``'s key
    label: str  # what reports call it
    #: its lookups carry key components: a miss is explained by those that differ (``analysis.cache_misses``)
    keyed: bool = False
    #: a kernel code cache: one lookup per kernel a compile defines (``capture.kernel_cache``)
    kernel: bool = False
    #: name prefixes of its markers, ``<prefix>hit`` / ``miss`` / ``bypass``: torch's chromium
    #: instant events and TORCH_TRACE artifacts (``model.cache`` counts them per compile)
    markers: tuple[str, ...] = ()
    #: the prefix of its TORCH_TRACE artifacts whose payload is a lookup's cache info
    artifact: str | None = None
    #: its place among the per-compile counts (``CompiledFrame.cache``; 0: not counted there)
    counted: int = 0
    #: outcome -> the CompilationMetrics counters summed for it: the per-compile counts' fallback
    counters: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


#: every cache, in the order reports and comparisons list them
CACHES: tuple[Cache, ...] = (
    Cache("dynamo", "Dynamo's in-memory cache"),
    Cache("pgo", "Dynamo's profile-guided code state"),
    Cache("aot_autograd", "AOTAutograd cache", keyed=True, markers=("aotautograd_cache_", "autograd_cache_"),
          artifact="aotautograd_cache_", counted=2,
          counters={"hit": ("aotautograd_local_cache_hit_count", "aotautograd_remote_cache_hit_count"),
                    "miss": ("aotautograd_local_cache_miss_count", "aotautograd_remote_cache_miss_count")}),
    Cache("fx_graph", "FX graph cache", keyed=True, markers=("fx_graph_cache_",), artifact="fx_graph_cache_",
          counted=1,
          counters={"hit": ("inductor_fx_local_cache_hit_count", "inductor_fx_remote_cache_hit_count"),
                    "miss": ("inductor_fx_local_cache_miss_count", "inductor_fx_remote_cache_miss_count")}),
    Cache("cpp_kernel", "C++ kernel code cache", kernel=True),
    Cache("triton_kernel", "Triton kernel code cache", kernel=True),
    Cache("halide_kernel", "Halide kernel code cache", kernel=True),
)  # fmt: skip


def tables(caches: Iterable[Cache]) -> dict[str, Any]:
    """What the layers look up in ``caches``, by the name each table has in this module."""
    caches = list(caches)
    return {
        "BY_NAME": {c.name: c for c in caches},
        "CACHE_NAMES": {c.name: c.label for c in caches},
        "KEYED": tuple(c.name for c in caches if c.keyed),
        "KERNEL_CACHES": tuple(c.name for c in caches if c.kernel),
        "COUNTED": {c.name: c.label for c in sorted(caches, key=lambda c: c.counted) if c.counted},
        "MARKER_PREFIXES": {p: c.name for c in caches for p in c.markers},
        "ARTIFACT_PREFIXES": tuple(c.artifact for c in caches if c.artifact),
    }


_TABLES = tables(CACHES)
BY_NAME: dict[str, Cache] = _TABLES["BY_NAME"]
#: cache name -> what reports call it
CACHE_NAMES: dict[str, str] = _TABLES["CACHE_NAMES"]
#: the caches whose lookups carry key components
KEYED: tuple[str, ...] = _TABLES["KEYED"]
#: the kernel code caches: one lookup per kernel a compile defines (``capture.kernel_cache``)
KERNEL_CACHES: tuple[str, ...] = _TABLES["KERNEL_CACHES"]
#: the caches counted per compile (``CompiledFrame.cache``), in their order -> their label
COUNTED: dict[str, str] = _TABLES["COUNTED"]
#: marker name prefix -> its cache (``model.cache.marker``)
MARKER_PREFIXES: dict[str, str] = _TABLES["MARKER_PREFIXES"]
#: the TORCH_TRACE artifacts that hold a cache lookup (``ingest.trace_to_session``)
ARTIFACT_PREFIXES: tuple[str, ...] = _TABLES["ARTIFACT_PREFIXES"]
#: a kernel lookup's reason: where its binary came from (a hit) or was built (a miss)
KERNEL_ON_DISK = "on disk"
KERNEL_LOADED = "already loaded by this process"
KERNEL_IN_WORKER = "built in a compile worker"
KERNEL_IN_PROCESS = "built in process"
OUTCOMES = ("hit", "miss", "bypass")
#: most characters of a component's value kept
VALUE_CHARS = 200
#: components that hold the graph's code (FX graph cache and AOTAutograd: ``gm``)
GRAPH_COMPONENTS = frozenset({"gm", "mod"})

_LINE = re.compile(r"\[([^\]\s]*)\] ([^:\n]*?): ?(.*)", re.DOTALL)
_NODE = re.compile(r"^\s+([A-Za-z_]\w*) = (.+)$")
_RETURN = re.compile(r"^\s+return\b(.*)$")
#: FX code frees dead values on the line that last used them (``;  x = None``): not part of the node
_FREES = re.compile(r";\s+[\w\s=]+= None\s*$")
_UNPRINTABLE = re.compile(r"[^\t\n\x20-\x7e\u00a0-\ufffd]")


@dataclass(frozen=True)
class KeyComponent:
    """One part of a cache key (or one node of the graph's code): its name, torch's hash of it,
    and its value cut to ``VALUE_CHARS`` characters."""

    name: str
    hash: str
    value: str = ""


@dataclass
class CacheLookup:
    """One lookup of one cache by one compile."""

    frame: str  # CompiledFrame.key
    cache: str  # CACHE_NAMES: dynamo | pgo | aot_autograd | fx_graph
    outcome: str  # hit | miss | bypass
    reason: str | None = None  # a bypass's (or a Dynamo miss's) reason in words
    key: str | None = None  # the cache key; None for a bypass (torch computes none)
    time_saved_s: float | None = None  # on a hit, the compile time it saved, where torch says
    #: indices into ``CacheKeys.components``; empty when torch gave none (AOTAutograd without
    #: its debug lines, a bypass, a log that does not hold them)
    components: list[int] = field(default_factory=list)
    #: the graph's nodes, one hash each, as indices into ``CacheKeys.components`` too
    nodes: list[int] = field(default_factory=list)
    #: a kernel code cache lookup's kernel (its name in Inductor's output code); None otherwise
    kernel: str | None = None
    #: a kernel miss's build seconds as its compile worker measured them; None: not measured
    built_s: float | None = None


@dataclass
class CacheKeys:
    """Every cache lookup of a session, and the distinct key components they refer to."""

    components: list[KeyComponent] = field(default_factory=list)
    lookups: list[CacheLookup] = field(default_factory=list)

    def parts(self, lookup: CacheLookup) -> list[KeyComponent]:
        return [self.components[i] for i in lookup.components if 0 <= i < len(self.components)]

    def node_parts(self, lookup: CacheLookup) -> list[KeyComponent]:
        return [self.components[i] for i in lookup.nodes if 0 <= i < len(self.components)]

    def of_frame(self, key: str) -> list[CacheLookup]:
        return [lk for lk in self.lookups if lk.frame == key]


@dataclass
class ParsedLookup:
    """A lookup as read from torch, before its components are interned into a session."""

    cache: str
    outcome: str
    reason: str | None = None
    key: str | None = None
    time_saved_s: float | None = None
    components: list[KeyComponent] = field(default_factory=list)
    nodes: list[KeyComponent] = field(default_factory=list)
    kernel: str | None = None
    built_s: float | None = None


class ComponentTable:
    """Builds ``CacheKeys.components`` without duplicates while a session is assembled."""

    def __init__(self, keys: CacheKeys | None = None) -> None:
        self.keys = keys if keys is not None else CacheKeys()
        self._index = {(c.name, c.hash, c.value): i for i, c in enumerate(self.keys.components)}

    def intern(self, c: KeyComponent) -> int:
        k = (c.name, c.hash, c.value)
        i = self._index.get(k)
        if i is None:
            i = self._index[k] = len(self.keys.components)
            self.keys.components.append(c)
        return i

    def add(self, frame: str, lk: ParsedLookup) -> CacheLookup:
        """``lk`` as the session's lookup: every field carried over, its components interned."""
        values = {name: getattr(lk, name) for name in _CARRIED}
        comps, nodes = [self.intern(c) for c in lk.components], [self.intern(c) for c in lk.nodes]
        out = CacheLookup(frame, components=comps, nodes=nodes, **values)
        self.keys.lookups.append(out)
        return out


#: the fields ``ComponentTable.add`` carries from a ``ParsedLookup`` to its ``CacheLookup`` as they are
_CARRIED = tuple(f.name for f in dataclasses.fields(ParsedLookup) if f.name not in ("components", "nodes"))


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _seconds(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _kernel_name(v: Any) -> str | None:
    return cut(v, 200) if isinstance(v, str) and v else None


@dataclass(frozen=True)
class LookupFact:
    """One optional fact of a lookup, as the journal carries it."""

    attr: str  # its ``ParsedLookup`` / ``CacheLookup`` attribute
    record: str  # its key in a ``cache_lookup`` record (written only when set: not None, not "")
    read: Callable[[Any], Any]  # a record's value (None when absent) -> the attribute's value
    since: int  # the journal schema that added it


#: a lookup's optional facts, in the order a ``cache_lookup`` record lists them
LOOKUP_FACTS: tuple[LookupFact, ...] = (
    LookupFact("reason", "reason", _str, 4),
    LookupFact("key", "cache_key", _str, 4),
    LookupFact("time_saved_s", "saved_s", _seconds, 4),
    LookupFact("kernel", "kernel", _kernel_name, 8),
)
#: the journal schema of the newest lookup fact (``model.journal.JOURNAL_SCHEMA`` is at least this)
LOOKUP_SCHEMA = max(f.since for f in LOOKUP_FACTS)


class KeyPart(TypedDict):
    """Cache key components, or graph nodes, seen for the first time in this journal (schema 4),
    written just before the ``cache_lookup`` that first uses them: ``items`` are
    ``[id, name, hash, value]`` (``value`` cut to 200 characters); lookups refer to them by id."""

    t: Literal["key_part"]
    items: list[list[Any]]


class CacheLookupRecord(TypedDict):
    """One lookup of one cache by a compile (schema 4): ``key`` the frame's; ``cache`` one of
    ``CACHE_NAMES``; ``parts`` and ``nodes`` are ``key_part`` ids; the optional keys are
    ``LOOKUP_FACTS``' (``kernel``, schema 8: a kernel code cache lookup's kernel)."""

    t: Literal["cache_lookup"]
    key: str | None
    cache: str
    outcome: str
    parts: list[int]
    nodes: list[int]
    reason: NotRequired[str]
    cache_key: NotRequired[str]
    saved_s: NotRequired[float]
    kernel: NotRequired[str]


def lookup_record(key: str, lk: ParsedLookup, id_of: Callable[[KeyComponent], int]) -> CacheLookupRecord:
    """The ``cache_lookup`` record of ``lk`` by the compile ``key`` (``id_of``: a component's
    ``key_part`` id)."""
    rec: dict[str, Any] = {
        "t": "cache_lookup", "key": key, "cache": lk.cache, "outcome": lk.outcome,
        "parts": [id_of(c) for c in lk.components], "nodes": [id_of(c) for c in lk.nodes],
    }  # fmt: skip
    for f in LOOKUP_FACTS:
        v = getattr(lk, f.attr)
        if v is not None and v != "":
            rec[f.record] = v
    return cast(CacheLookupRecord, rec)


def read_lookup(r: Mapping[str, Any], resolve: Callable[[Any], list[KeyComponent]]) -> tuple[str, ParsedLookup] | None:
    """A ``cache_lookup`` record -> (its compile's key, the lookup); None when it lacks one of
    them (``resolve``: a list of ``key_part`` ids -> the components known)."""
    key, cache, outcome = _str(r.get("key")), _str(r.get("cache")), _str(r.get("outcome"))
    if key is None or cache is None or outcome is None:
        return None
    facts = {f.attr: f.read(r.get(f.record)) for f in LOOKUP_FACTS}
    return key, ParsedLookup(cache, outcome, components=resolve(r.get("parts")), nodes=resolve(r.get("nodes")), **facts)


def cut(value: str, limit: int = VALUE_CHARS) -> str:
    """``value`` with unprintable characters replaced, cut to ``limit`` characters (``...`` marks a cut)."""
    if len(value) <= limit:
        return _UNPRINTABLE.sub("?", value)
    return _UNPRINTABLE.sub("?", value[: limit - 3]) + "..."  # one character for one: cut first


@functools.lru_cache(maxsize=8192)  # a run's lookups repeat most lines (the config): pure, on a str
def parse_component(line: str) -> tuple[KeyComponent, str] | None:
    """``[hash] name: value`` -> (the component with its value cut, the whole value); None if not one."""
    m = _LINE.match(line)
    if m is None:
        return None
    return KeyComponent(m.group(2), m.group(1), cut(m.group(3))), m.group(3)


def _hash(text: str) -> str:
    import hashlib  # here: the run's child imports this module before the script (model/__init__)

    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def graph_nodes(code: str) -> list[KeyComponent]:
    """One component per node of an FX graph's printed code (``name = op(...)`` lines and the
    ``return``): named by the node, hashed on its line less the frees FX appends."""
    out: list[KeyComponent] = []
    for line in code.splitlines():
        m = _NODE.match(line)
        if m is not None:
            text = _FREES.sub("", m.group(2)).rstrip()
            out.append(KeyComponent(m.group(1), _hash(text), cut(f"{m.group(1)} = {text}")))
        elif (r := _RETURN.match(line)) is not None:
            text = "return" + _FREES.sub("", r.group(1)).rstrip()
            out.append(KeyComponent("return", _hash(text), cut(text)))
    return out


def joined(lines: Iterable[Any]) -> list[str]:
    """One entry per component: torch 2.4 logs its ``debug_str`` split at every newline, so a
    multi-line value (the graph's code) continues on entries that are not ``[hash] name: ...``;
    those are joined back to the component they belong to. Later torch gives one entry each."""
    out: list[str] = []
    for line in lines:
        if not isinstance(line, str):
            continue
        if out and not line.startswith("["):  # the graph's code lines start with spaces, def, #
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def components_of(lines: Iterable[Any]) -> tuple[list[KeyComponent], list[KeyComponent]]:
    """Torch's debug lines -> (components, the graph's nodes)."""
    comps: list[KeyComponent] = []
    nodes: list[KeyComponent] = []
    for line in joined(lines):
        got = parse_component(line)
        if got is None:
            continue
        comp, whole = got
        comps.append(comp)
        if comp.name in GRAPH_COMPONENTS and not nodes:
            nodes = graph_nodes(whole)
    return comps, nodes


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300 else None


def lookup_from_info(cache: str, info: Mapping[str, Any], outcome: str | None = None) -> ParsedLookup | None:
    """Torch's cache info (the metadata of an ``fx_graph_cache_*`` / ``autograd_cache_*`` event,
    the payload of its TORCH_TRACE artifact) -> a lookup; None when it says no outcome."""
    state = info.get("cache_state", outcome)
    if state not in OUTCOMES:
        return None
    reason = info.get("cache_bypass_reason")
    key = info.get("key")
    saved = _num(info.get("time_saved_ns"))
    if saved is not None:
        saved_s: float | None = saved / 1e9
    else:  # AOTAutograd says its saving in ms (forward + backward)
        ms = _num(info.get("time_saved_ms"))
        saved_s = ms / 1e3 if ms is not None else None
    raw = info.get("components")
    comps, nodes = components_of(raw) if isinstance(raw, list) else ([], [])
    return ParsedLookup(
        cache, str(state), one_line(cut(str(reason), 2000), 500) if reason else None, str(key) if key else None,
        stored_s(saved_s) if saved_s is not None and saved_s >= 0 and state == "hit" else None, comps, nodes,
    )  # fmt: skip
