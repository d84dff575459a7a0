"""Why a cache missed: within one run, on a warm start, and between two runs.

Pure functions over ``Session.cache_keys`` (``model.cache_keys``). A miss is explained by the key
components whose hashes differ from a lookup that could have served it:

* within one run, the latest earlier lookup of the same cache with the same graph (the graph's
  component hashes alike) but another key;
* between two runs, the lookup at the same place in run A (the same frame, by
  ``analysis.compare.match_frames``, and the same cache's n-th lookup in it) that hit.

The differing components are ordered so the likeliest cause comes first: torch version and
system, then config, custom passes and user Triton kernels, the inputs, the graph's code, the
rest. Each is said in words (``Difference.words``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dynaprof.analysis.compare import match_frames
from dynaprof.model.cache_keys import CACHE_NAMES, GRAPH_COMPONENTS, CacheKeys, CacheLookup, KeyComponent
from dynaprof.model.session import Session

#: caches whose lookups carry key components (Dynamo's own caches say only a reason)
KEYED = ("aot_autograd", "fx_graph")
#: kinds of difference, likeliest cause first
KINDS = ("torch", "config", "custom", "input", "graph", "other")
KIND_LABELS = {
    "torch": "torch version or system",
    "config": "config",
    "custom": "custom pass or user Triton kernel",
    "input": "input",
    "graph": "graph code",
    "other": "other",
}
_TORCH = ("torch_version", "system_info", "cpp_runtime_thread_count", "triton_version")
_CUSTOM = ("custom_pass", "custom_backend_passes", "custom_partitioner", "_fuse_ddp_communication_passes",
           "user_defined_triton", "triton_kernel", "custom_op", "post_grad_custom", "pre_grad_custom")  # fmt: skip
_CONFIG_LABELS = {
    "inductor_config": "Inductor config",
    "inductor_config_comms": "Inductor comms config",
    "fx_kwargs": "compile option",
}
_INDEXED = re.compile(r"^(\w+)\[(.*)\]$")
_TENSOR_FIELDS = {
    "dtype": re.compile(r"dtype=([\w.]+)"),
    "shape": re.compile(r"shape=torch\.Size\(\[([^\]]*)\]\)"),
    "stride": re.compile(r"stride=\(([^)]*)\)"),
    "device": re.compile(r"device=device\(type='(\w+)'"),
    "requires_grad": re.compile(r"requires_grad=(\w+)"),
}


@dataclass
class Difference:
    """One key component whose hash differs between two lookups."""

    kind: str  # KINDS
    name: str  # torch's component name (``inductor_config[max_fusion_size]``, ``gm``)
    words: str  # what differs, in words, with both values


@dataclass
class MissExplained:
    """A miss, and what differed from the lookup that could have served it."""

    frame: str  # the missing lookup's frame key
    cache: str
    against: str  # the other lookup's frame key (in this run, or in run A)
    differences: list[Difference] = field(default_factory=list)
    #: both lookups had components (else the differences are unknown, not none)
    known: bool = True
    same_key: bool = False  # the same key: the entry was not stored or not found, not a key change

    def line(self, where: str = "") -> str:
        """In words; ``where`` names the other run (``"BASE's "``), empty within one run."""
        cache = CACHE_NAMES.get(self.cache, self.cache)
        other = f"{where}{self.against}"
        head = f"{self.frame}: {cache} missed ({other} hit)" if where else \
            f"{self.frame}: {cache} missed (the same graph as {other})"
        if not self.known:
            return f"{head}, but torch gave no key components to compare"
        if self.same_key:
            return f"{head} with the same key: the entry was not stored, or was evicted"
        if not self.differences:
            return f"{head}: its key differs, but no component's hash does"
        first = self.differences[0]
        more = len(self.differences) - 1
        tail = f" (and {more} more component{'s' if more > 1 else ''})" if more else ""
        return f"{head}: {first.words}{tail}"


@dataclass
class WarmStart:
    """How much of a run the caches served: graphs whose AOTAutograd or FX graph lookup hit."""

    served: int
    graphs: int
    saved_s: float | None  # the compile time torch says the hits saved; None: it did not say

    def line(self) -> str:
        saved = f", {self.saved_s:.1f} s saved" if self.saved_s is not None else ""
        return f"served from cache: {self.served} of {self.graphs} graph{'' if self.graphs == 1 else 's'}{saved}"


def _kind(name: str) -> str:
    if any(name.startswith(t) for t in _TORCH):
        return "torch"
    if any(c in name for c in _CUSTOM):
        return "custom"
    if name in GRAPH_COMPONENTS:
        return "graph"
    if name.startswith("example_inputs"):
        return "input"
    base = m.group(1) if (m := _INDEXED.match(name)) else name
    if base in _CONFIG_LABELS or base.endswith("_config") or base.endswith("config"):
        return "config"
    return "other"


def _tensor_fields(value: str) -> dict[str, str]:
    return {k: m.group(1) for k, rx in _TENSOR_FIELDS.items() if (m := rx.search(value))}


def _input_words(name: str, a: str, b: str) -> str:
    m = _INDEXED.match(name)
    label = f"input {m.group(2)}" if m else name
    fa, fb = _tensor_fields(a), _tensor_fields(b)
    changed = [k for k in _TENSOR_FIELDS if k in fa and k in fb and fa[k] != fb[k]]
    if changed:
        return f"{label}: " + "; ".join(f"{k} ({fa[k]}) -> ({fb[k]})" if k in ("shape", "stride")
                                        else f"{k} {fa[k]} -> {fb[k]}" for k in changed)  # fmt: skip
    return f"{label}: {a or '(absent)'} -> {b or '(absent)'}"


def first_node_difference(a: list[KeyComponent], b: list[KeyComponent]) -> str | None:
    """The first node of the graph whose hash differs (or that one graph lacks), in words."""
    for i in range(max(len(a), len(b))):
        na = a[i] if i < len(a) else None
        nb = b[i] if i < len(b) else None
        if na is not None and nb is not None and na.hash == nb.hash:
            continue
        where = f"node {i + 1}"
        if na is None:
            return f"{where} added: {nb.value if nb else ''}"
        if nb is None:
            return f"{where} removed: {na.value}"
        return f"first differing node {nb.name} ({where}): {na.value} -> {nb.value}"
    return None


def describe(name: str, a: KeyComponent | None, b: KeyComponent | None,
             nodes_a: list[KeyComponent], nodes_b: list[KeyComponent]) -> Difference:  # fmt: skip
    """One differing component in words: what it is and both values."""
    kind = _kind(name)
    va, vb = (a.value if a else ""), (b.value if b else "")
    if kind == "graph":
        node = first_node_difference(nodes_a, nodes_b) if nodes_a and nodes_b else None
        return Difference(kind, name, "the graph's code changed" + (f": {node}" if node else ""))
    if kind == "input":
        return Difference(kind, name, _input_words(name, va, vb))
    both = f"{va or '(absent)'} -> {vb or '(absent)'}"
    if kind == "config":
        m = _INDEXED.match(name)
        if m and m.group(1) in _CONFIG_LABELS:
            return Difference(kind, name, f"{_CONFIG_LABELS[m.group(1)]} {m.group(2)}: {both}")
        return Difference(kind, name, f"{name}: {both}")
    if kind == "torch":
        what = "torch version" if name.startswith("torch_version") else f"system ({name})"
        return Difference(kind, name, f"{what}: {both}")
    if kind == "custom":
        return Difference(kind, name, f"custom pass or user-defined Triton kernel {name}: {both}")
    return Difference(kind, name, f"{name}: {both}")


def differences(keys_a: CacheKeys, a: CacheLookup, keys_b: CacheKeys, b: CacheLookup) -> list[Difference]:
    """The components of ``b``'s key whose hash differs from ``a``'s, likeliest cause first."""
    pa = {c.name: c for c in keys_a.parts(a)}
    pb = {c.name: c for c in keys_b.parts(b)}
    na, nb = keys_a.node_parts(a), keys_b.node_parts(b)
    out = [
        describe(name, pa.get(name), pb.get(name), na, nb)
        for name in list(pb) + [n for n in pa if n not in pb]
        if pa.get(name) is None or pb.get(name) is None or pa[name].hash != pb[name].hash
    ]
    order = {k: i for i, k in enumerate(KINDS)}
    return sorted(out, key=lambda d: order.get(d.kind, len(KINDS)))  # stable: torch's order within a kind


def _graph_hash(keys: CacheKeys, lk: CacheLookup) -> str | None:
    return next((c.hash for c in keys.parts(lk) if c.name in GRAPH_COMPONENTS), None)


def _explain(keys_a: CacheKeys, a: CacheLookup, keys_b: CacheKeys, b: CacheLookup) -> MissExplained:
    known = bool(a.components) and bool(b.components)
    out = MissExplained(b.frame, b.cache, a.frame, known=known)
    if a.key is not None and a.key == b.key:
        out.same_key = True
    elif known:
        out.differences = differences(keys_a, a, keys_b, b)
    return out


def misses_in_run(s: Session) -> list[MissExplained]:
    """Each keyed miss for which an identical graph was looked up earlier in the run under another
    key: the components that differ from the latest such lookup."""
    keys = s.cache_keys
    out: list[MissExplained] = []
    seen: dict[tuple[str, str], CacheLookup] = {}  # (cache, graph hash) -> latest lookup
    for lk in keys.lookups:
        if lk.cache not in KEYED:
            continue
        g = _graph_hash(keys, lk)
        if g is None:
            continue
        earlier = seen.get((lk.cache, g))
        if lk.outcome == "miss" and earlier is not None and earlier.key != lk.key:
            out.append(_explain(keys, earlier, keys, lk))
        seen[(lk.cache, g)] = lk
    return out


def warm_start(s: Session) -> WarmStart | None:
    """Graphs served from the caches: per compile, its AOTAutograd lookup hit, else its FX graph
    lookups all hit. None when no compile looked up either cache."""
    by_frame: dict[str, list[CacheLookup]] = {}
    for lk in s.cache_keys.lookups:
        if lk.cache in KEYED:
            by_frame.setdefault(lk.frame, []).append(lk)
    if not by_frame:
        return None
    served, saved, any_saved = 0, 0.0, False
    for lks in by_frame.values():
        aot = [lk for lk in lks if lk.cache == "aot_autograd" and lk.outcome == "hit"]
        fx = [lk for lk in lks if lk.cache == "fx_graph"]
        hits = aot or (fx if fx and all(lk.outcome == "hit" for lk in fx) else [])
        if hits:
            served += 1
            for lk in hits:
                if lk.time_saved_s is not None:
                    saved += lk.time_saved_s
                    any_saved = True
    return WarmStart(served, len(by_frame), round(saved, 3) if any_saved else None)


def misses_between(a: Session, b: Session) -> list[MissExplained]:
    """Each lookup that hit in run A and missed in run B at the same place (the same frame and the
    same cache's n-th lookup in it): the components whose hashes differ."""
    pairs, _, _ = match_frames(a.frames, b.frames)
    out: list[MissExplained] = []
    for _key, _i, fa, fb in pairs:
        la, lb = a.cache_keys.of_frame(fa.key), b.cache_keys.of_frame(fb.key)
        for cache in KEYED:
            ca = [lk for lk in la if lk.cache == cache]
            cb = [lk for lk in lb if lk.cache == cache]
            for x, y in zip(ca, cb, strict=False):  # the n-th lookup of each
                if x.outcome == "hit" and y.outcome == "miss":
                    out.append(_explain(a.cache_keys, x, b.cache_keys, y))
    return out


def bypasses(s: Session) -> list[tuple[CacheLookup, str]]:
    """Every bypass with its reason (torch's words, or that it gave none)."""
    return [(lk, lk.reason or "torch gave no reason") for lk in s.cache_keys.lookups if lk.outcome == "bypass"]
