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
from collections.abc import Iterator
from dataclasses import dataclass, field

from dynaprof.analysis.compare import match_frames
from dynaprof.fmt import plural
from dynaprof.model.cache_keys import (
    CACHE_NAMES,
    GRAPH_COMPONENTS,
    KERNEL_CACHES,
    KERNEL_LOADED,
    KEYED,
    CacheKeys,
    CacheLookup,
    KeyComponent,
)
from dynaprof.model.session import Session

#: a kernel key's component for its source (``capture.kernel_cache``)
KERNEL_SOURCE = frozenset({"kernel_source"})
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
    kernel: str | None = None  # a kernel code cache lookup's kernel

    def line(self, where: str = "") -> str:
        """In words; ``where`` names the other run (``"BASE's "``), empty within one run."""
        cache = CACHE_NAMES.get(self.cache, self.cache) + (f" ({self.kernel})" if self.kernel else "")
        other = f"{where}{self.against}"
        same = "source" if self.kernel else "graph"
        head = f"{self.frame}: {cache} missed ({other} hit)" if where else \
            f"{self.frame}: {cache} missed (the same {same} as {other})"
        if not self.known:
            if self.cache == "aot_autograd":  # torch 2.13 gives them only at DEBUG logging
                return f"{head}: its key's components were not recorded (`dynaprof run --aot-components` records them)"
            return f"{head}, but torch gave no key components to compare"
        if self.same_key:
            what = "the binary was not on disk (another cache folder, or removed)" if self.kernel \
                else "the entry was not stored, or was evicted"  # fmt: skip
            return f"{head} with the same key: {what}"
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


#: a kernel key's compile command parts that the machine and toolchain decide (the rest: config)
_KERNEL_SYSTEM = ("compile_command[compiler]", "compile_command[ISA flags]")


def _kind(name: str) -> str:
    if name.startswith("kernel_"):  # the kernel's source: what Inductor generated from the graph
        return "graph"
    if name.startswith("compile_command["):
        return "torch" if name in _KERNEL_SYSTEM else "config"
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


def _token_change(a: str, b: str) -> str:
    """Two flag lists as what one drops and the other adds (both whole, where neither was cut)."""
    if a.endswith("...") or b.endswith("..."):
        return f"{a or '(none)'} -> {b or '(none)'}"
    ta, tb = a.split(), b.split()
    gone, new = [t for t in ta if t not in tb], [t for t in tb if t not in ta]
    if not gone and not new:  # the same flags in another order
        return f"{a} -> {b}"
    return f"{' '.join(gone) or '(none)'} -> {' '.join(new) or '(none)'}"


def describe(name: str, a: KeyComponent | None, b: KeyComponent | None,
             nodes_a: list[KeyComponent], nodes_b: list[KeyComponent]) -> Difference:  # fmt: skip
    """One differing component in words: what it is and both values."""
    kind = _kind(name)
    va, vb = (a.value if a else ""), (b.value if b else "")
    if name.startswith("kernel_"):
        return Difference(kind, name, "the kernel's optimized source changed" if "optimized" in name
                          else "the kernel's source changed")  # fmt: skip
    if name.startswith("compile_command["):
        return Difference(kind, name, f"compile command, {name[16:-1]}: {_token_change(va, vb)}")
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
    """The hash of what the key was made for: the graph's code, or a kernel's source."""
    names = KERNEL_SOURCE if lk.cache in KERNEL_CACHES else GRAPH_COMPONENTS
    return next((c.hash for c in keys.parts(lk) if c.name in names), None)


def _explain(keys_a: CacheKeys, a: CacheLookup, keys_b: CacheKeys, b: CacheLookup) -> MissExplained:
    known = bool(a.components) and bool(b.components)
    out = MissExplained(b.frame, b.cache, a.frame, known=known, kernel=b.kernel)
    if a.key is not None and a.key == b.key:
        out.same_key = True
    elif known:
        out.differences = differences(keys_a, a, keys_b, b)
    return out


def misses_in_run(s: Session) -> list[MissExplained]:
    """Each keyed miss for which an identical graph (or kernel source) was looked up earlier in the
    run under another key: the components that differ from the latest such lookup."""
    keys = s.cache_keys
    out: list[MissExplained] = []
    seen: dict[tuple[str, str], CacheLookup] = {}  # (cache, graph hash) -> latest lookup
    for lk in keys.lookups:
        if lk.cache not in KEYED and lk.cache not in KERNEL_CACHES:
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


def paired_lookups(a: Session, b: Session, caches: tuple[str, ...]) -> Iterator[tuple[CacheLookup, CacheLookup]]:
    """The lookups of two runs at the same place: the same frame (``match_frames``) and the same
    cache's n-th lookup in it (for a kernel code cache, the n-th kernel looked up in the compile)."""
    pairs, _, _ = match_frames(a.frames, b.frames)
    for _key, _i, fa, fb in pairs:
        la, lb = a.cache_keys.of_frame(fa.key), b.cache_keys.of_frame(fb.key)
        for cache in caches:
            ca = [lk for lk in la if lk.cache == cache]
            cb = [lk for lk in lb if lk.cache == cache]
            yield from zip(ca, cb, strict=False)


def misses_between(a: Session, b: Session) -> list[MissExplained]:
    """Each lookup that hit in run A and missed in run B at the same place (``paired_lookups``):
    the components whose hashes differ."""
    out: list[MissExplained] = []
    for x, y in paired_lookups(a, b, KEYED + KERNEL_CACHES):
        if x.outcome == "hit" and y.outcome == "miss":
            out.append(_explain(a.cache_keys, x, b.cache_keys, y))
    return out


def bypasses(s: Session) -> list[tuple[CacheLookup, str]]:
    """Every bypass with its reason (torch's words, or that it gave none)."""
    return [(lk, lk.reason or "torch gave no reason") for lk in s.cache_keys.lookups if lk.outcome == "bypass"]


@dataclass
class KernelCache:
    """One kernel code cache's lookups in a run: kernels on disk, already loaded, built."""

    cache: str
    kernels: int = 0
    on_disk: int = 0
    loaded: int = 0  # already loaded by this process (an earlier compile's kernel)
    built: int = 0
    built_s: float = 0.0  # the measured builds' seconds
    measured: int = 0  # builds with a measure

    def line(self) -> str:
        out = f"{CACHE_NAMES.get(self.cache, self.cache)}: {self.on_disk} of {plural(self.kernels, 'kernel')} on disk"
        if self.loaded:
            out += f", {self.loaded} already loaded by this process"
        if self.built:
            out += f", {self.built} built"
            if self.measured:
                some = "" if self.measured == self.built else f" ({self.measured} of them measured)"
                out += f" in {self.built_s:.2f} s{some}"
            else:  # built in process: no worker timed them
                out += " (build time not measured)"
        return out + ("; time saved not measured" if self.on_disk or self.loaded else "")


def kernel_caches(s: Session) -> list[KernelCache]:
    """Each kernel code cache a run looked up (``KERNEL_CACHES`` order), its lookups counted."""
    out: dict[str, KernelCache] = {}
    for lk in s.cache_keys.lookups:
        if lk.cache not in KERNEL_CACHES:
            continue
        k = out.setdefault(lk.cache, KernelCache(lk.cache))
        k.kernels += 1
        if lk.outcome == "hit":
            if lk.reason == KERNEL_LOADED:
                k.loaded += 1
            else:  # KERNEL_ON_DISK
                k.on_disk += 1
        elif lk.outcome == "miss":
            k.built += 1
            if lk.built_s is not None:
                k.built_s += lk.built_s
                k.measured += 1
    return [out[c] for c in KERNEL_CACHES if c in out]


@dataclass
class KernelsServed:
    """Kernels that run B found in its kernel code cache where run A built them (the same key)."""

    kernels: int
    base_built_s: float  # what A measured building them
    measured: int  # of them, with a measure in A

    def line(self) -> str:
        n = self.kernels
        saved = (f": BASE built {'them' if n > 1 else 'it'} in {self.base_built_s:.2f} s"
                 + ("" if self.measured == n else f" ({self.measured} of {n} measured)")) if self.measured \
            else ": BASE's build time not measured"  # fmt: skip
        return f"{n} kernel{' was' if n == 1 else 's were'} built in BASE and on disk in NEW{saved}"


def kernels_served(a: Session, b: Session) -> KernelsServed | None:
    """Kernel lookups that missed in A and hit in B with the same key, at the same place (the
    same frame, the n-th kernel): A's measured build seconds are what B's hits saved."""
    n, secs, measured = 0, 0.0, 0
    for x, y in paired_lookups(a, b, KERNEL_CACHES):
        if x.outcome == "miss" and y.outcome == "hit" and x.key is not None and x.key == y.key:
            n += 1
            if x.built_s is not None:
                secs += x.built_s
                measured += 1
    return KernelsServed(n, round(secs, 3), measured) if n else None
