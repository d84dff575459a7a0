"""Per-compile cache lookups, with their keys' components: what each cache a compile touched said.

Pure, and one home for reading torch's cache info, whichever way it reaches dynaprof: the live
capture (``capture.cache_keys``) and a TORCH_TRACE log's ``fx_graph_cache_*`` /
``aotautograd_cache_*`` artifacts (``ingest.cache_keys``) both hand the same dict to
``lookup_from_info``. Torch's key components are ``FxGraphCachePickler.debug_lines``: one line
``[hash] name: value`` per part of the key (each Inductor config key, each input's metadata, the
graph module's code, the torch version, ...). Values are kept cut to ``VALUE_CHARS``; the graph's
code is also split into one hash per node (``graph_nodes``) so the first node that differs can be
named. A session holds every distinct component once (``CacheKeys.components``) and each lookup
lists indices into it: a run's lookups share almost all their config components.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dynaprof.fmt import one_line, stored_s

#: cache name -> what reports call it (``model.cache.CACHE_LABELS`` names the two it counts)
CACHE_NAMES: dict[str, str] = {
    "dynamo": "Dynamo's in-memory cache",
    "pgo": "Dynamo's profile-guided code state",
    "aot_autograd": "AOTAutograd cache",
    "fx_graph": "FX graph cache",
    "cpp_kernel": "C++ kernel code cache",
    "triton_kernel": "Triton kernel code cache",
    "halide_kernel": "Halide kernel code cache",
}
#: the kernel code caches: one lookup per kernel a compile defines (``capture.kernel_cache``)
KERNEL_CACHES = ("cpp_kernel", "triton_kernel", "halide_kernel")
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
        out = CacheLookup(
            frame, lk.cache, lk.outcome, lk.reason, lk.key, lk.time_saved_s,
            [self.intern(c) for c in lk.components], [self.intern(c) for c in lk.nodes], lk.kernel, lk.built_s,
        )  # fmt: skip
        self.keys.lookups.append(out)
        return out


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
