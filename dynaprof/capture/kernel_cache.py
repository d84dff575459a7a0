"""Kernel code cache lookups: one per kernel a compile defines, hit or miss, with torch's key.

Inductor looks each C++ kernel up in its kernel code cache in ``CppCodeCache.load_async``: it
writes the kernel's source to ``<key>.main.cpp`` through ``codecache.write`` (the key: a hash of
the source and, as ``extra``, the compile command line; torch 2.4-2.6 write ``<key>.cpp`` with the
command's ``repr`` as ``extra``), then builds the binary only where it is not there:

* in a compile worker: the build is handed to ``AsyncCompile.submit`` (``kernel_builds`` sees it): a miss;
* in process (one compile thread): ``_worker_compile_cpp`` builds the targets that are missing:
  a miss where one was missing, a hit where none was;
* neither: the binary was on disk, or this process had loaded it already: a hit.

``write`` is wrapped to read the key where torch returns it, only while a builder call runs on
the same thread (``KernelBuilds.builder``). The key's components are dynaprof's own hashes of what
torch hashes together: the source, and the command line split into compiler, ISA flags,
optimisation flags, defines, paths and the rest, so a miss between two runs can say which changed.
A Halide kernel is keyed like C++ (its glue's key, whose source names the kernel's own folder).

Not recorded: Triton kernels (whether Triton's own cache, ``TRITON_CACHE_DIR``, served one is
decided inside its compile worker, out of these hooks' sight: said once), and an in-process build
where ``_worker_compile_cpp`` cannot be hooked (its outcome is unknown). Torch says no time saved
per kernel: a hit's saving is not measured. A miss's build seconds are its worker's own measure,
joined at ingest (``ingest.cache_keys``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dynaprof.capture.torch_private import _private, torch_version
from dynaprof.model.cache_keys import (
    KERNEL_IN_PROCESS,
    KERNEL_IN_WORKER,
    KERNEL_LOADED,
    KERNEL_ON_DISK,
    KeyComponent,
    ParsedLookup,
    cut,
)

CODECACHE = "torch._inductor.codecache"
#: the builder method -> its kernel code cache (``model.cache_keys.KERNEL_CACHES``)
CACHE_OF = {"cpp": "cpp_kernel", "cpp_pybinding": "cpp_kernel", "halide": "halide_kernel"}
#: the classes whose in-memory ``cache`` (key -> loader) says a kernel is loaded in this process
_LOADERS = ("CppCodeCache", "CppPythonBindingsCodeCache", "CppWrapperCodeCache")
#: the compile command's parts, each a component of its own
GROUPS = ("compiler", "ISA flags", "optimization flags", "defines", "paths", "other flags")


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def command_of(extra: str, optimized: str | None) -> str:
    """The compile command line in the ``extra`` torch hashes with a kernel's source: 2.13's
    ``f"{optimized_code} {command}"``, 2.4-2.6's ``repr(command)``."""
    if optimized is not None and extra.startswith(optimized + " "):
        return extra[len(optimized) + 1 :].strip()
    if extra.startswith("None "):
        return extra[5:].strip()
    if len(extra) >= 2 and extra[0] == extra[-1] and extra[0] in "'\"":
        try:
            value = ast.literal_eval(extra)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return extra.strip()
        if isinstance(value, str):
            return value.strip()
    return extra.strip()


def _group(token: str) -> str:
    if token.startswith("-m") or "CPU_CAPABILITY" in token:
        return "ISA flags"
    if token.startswith(("-O", "-f", "-g")) and token != "-fPIC":
        return "optimization flags"
    if token.startswith("-D"):
        return "defines"
    if token.startswith(("-I", "-L", "-l", "-Wl,")) or "/" in token:
        return "paths"
    return "other flags"


@functools.lru_cache(maxsize=64)  # a run's kernels share a few command lines: pure, on a str
def command_components(command: str) -> tuple[KeyComponent, ...]:
    """The command line as one component per part (``GROUPS``): named ``compile_command[part]``,
    hashed on the part's tokens, valued with them (cut to 200 characters)."""
    tokens = command.split()
    parts: dict[str, list[str]] = {g: [] for g in GROUPS}
    if tokens:
        parts["compiler"].append(tokens[0])
    i = 1
    while i < len(tokens):
        t = tokens[i]
        if t in ("-D", "-I", "-L", "-l", "-include") and i + 1 < len(tokens):  # a flag and its value
            t, i = f"{t} {tokens[i + 1]}", i + 1
        parts[_group(t)].append(t)
        i += 1
    return tuple(KeyComponent(f"compile_command[{g}]", _hash(" ".join(v)), cut(" ".join(v)))
                 for g, v in parts.items() if v)  # fmt: skip


def kernel_components(source: str, extra: str, optimized: str | None) -> list[KeyComponent]:
    """A C++ kernel's key components: its source (and the optimized part's, where torch builds one
    apart), then its compile command's parts."""
    out = [KeyComponent("kernel_source", _hash(source.strip()))]
    if optimized is not None:
        out.append(KeyComponent("kernel_optimized_source", _hash(optimized.strip())))
    return out + list(command_components(command_of(extra, optimized)))


@dataclass
class Probe:
    """What one builder call showed: torch's ``write`` calls of C++ sources, and the in-process
    build check (None: none ran)."""

    writes: list[tuple[str, str, str, str]] = field(default_factory=list)  # (extension, content, extra, key)
    built: bool | None = None
    loaded: bool = False  # the key was in this process's loaded-kernel cache when written


def _arg(a: tuple[Any, ...], k: dict[str, Any], i: int, name: str, default: Any = None) -> Any:
    return a[i] if len(a) > i else k.get(name, default)


def _targets(args: tuple[Any, ...]) -> list[str]:
    """The files ``_worker_compile_cpp`` builds: its builders' targets (2.5+), else (2.4) its
    ``.so`` output path."""
    out: list[str] = []
    for x in args[1:]:
        items = x if isinstance(x, (list, tuple)) else [x]
        for b in items:
            if callable(getattr(b, "get_target_file_path", None)):
                out.append(str(b.get_target_file_path()))
            elif isinstance(b, str) and b.endswith(".so"):
                out.append(b)
    return out


class KernelLookups:
    """The hooks' state (a probe per thread while a builder call runs) and the lookups they write."""

    def __init__(self, emit: Callable[[ParsedLookup, str | None], None], warn: Callable[[str], None]) -> None:
        self.emit, self.warn = emit, warn
        self.local = threading.local()
        self.loaders: list[Any] = []
        self.said_triton = False

    def begin(self) -> Probe | None:
        before: Probe | None = getattr(self.local, "probe", None)
        self.local.probe = Probe()
        return before

    def end(self, before: Probe | None) -> Probe:
        probe: Probe = self.local.probe
        self.local.probe = before
        return probe

    def record(self, frame_key: str, method: str, name: str, out: Any, submitted: bool, probe: Probe) -> None:
        """Journal the lookup a builder call made for the kernel ``name`` (``out``: its result)."""
        cache = CACHE_OF.get(method)
        if cache is None:
            if method == "triton" and not self.said_triton:
                self.said_triton = True
                self.warn("Triton kernels' code cache outcomes are not recorded: whether Triton's own cache "
                          "(TRITON_CACHE_DIR) served a kernel is decided inside its compile worker")  # fmt: skip
            return
        if submitted:
            outcome, reason = "miss", KERNEL_IN_WORKER
        elif probe.built:
            outcome, reason = "miss", KERNEL_IN_PROCESS
        elif callable(getattr(out, "result", None)) or probe.built is False or probe.loaded:
            outcome, reason = "hit", KERNEL_LOADED if probe.loaded else KERNEL_ON_DISK
        else:  # built in process, but whether anything was built is unknown here
            return
        main = next((w for w in probe.writes if w[0] == "main.cpp"), None) or \
            next((w for w in reversed(probe.writes) if w[0] == "cpp"), None)  # fmt: skip
        if main is None:  # no key seen (a torch that keys its kernels elsewhere): no lookup to say
            return
        opt = next((w[1] for w in probe.writes if w[0] == "optimized.cpp"), None)
        self.emit(ParsedLookup(cache, outcome, reason, main[3], None, kernel_components(main[1], main[2], opt),
                               kernel=name), frame_key)  # fmt: skip

    def wrap_write(self, orig: Any) -> Any:
        local = self.local

        @functools.wraps(orig)
        def write(*a: Any, **k: Any) -> Any:
            out = orig(*a, **k)
            probe = getattr(local, "probe", None)
            if probe is not None:
                try:
                    ext, content = _arg(a, k, 1, "extension"), _arg(a, k, 0, "content")
                    extra = _arg(a, k, 2, "extra", "")
                    key = out[0] if isinstance(out, tuple) and out else None
                    if ext in ("main.cpp", "cpp", "optimized.cpp") and isinstance(content, str) \
                            and isinstance(extra, str) and isinstance(key, str):  # fmt: skip
                        probe.writes.append((ext, content, extra, key))
                        if ext != "optimized.cpp":
                            probe.loaded = any(key in getattr(c, "cache", {}) for c in self.loaders)
                except Exception:
                    pass
            return out

        return write

    def wrap_worker(self, orig: Any) -> Any:
        local = self.local

        @functools.wraps(orig)
        def _worker_compile_cpp(*a: Any, **k: Any) -> Any:
            probe = getattr(local, "probe", None)
            if probe is not None:  # in process, inside the builder call (a worker thread has no probe)
                try:
                    targets = _targets(a)
                    if targets:
                        probe.built = bool(probe.built) or not all(os.path.exists(t) for t in targets)
                except Exception:
                    pass
            return orig(*a, **k)

        return _worker_compile_cpp


def install(emit: Callable[[ParsedLookup, str | None], None], warn: Callable[[str], None]) -> KernelLookups:
    """Wrap ``codecache.write`` (the key) and ``_worker_compile_cpp`` (an in-process build).
    Raises where ``write`` moved: the caller warns and records no kernel lookups."""
    codecache: Any = _private(CODECACHE)
    hooks = KernelLookups(emit, warn)
    hooks.loaders = [c for n in _LOADERS if isinstance(getattr(c := getattr(codecache, n, None), "cache", None), dict)]
    codecache.write = hooks.wrap_write(codecache.write)
    worker = getattr(codecache, "_worker_compile_cpp", None)
    if callable(worker):
        codecache._worker_compile_cpp = hooks.wrap_worker(worker)
    else:
        warn(f"torch {torch_version()}: {CODECACHE} has no _worker_compile_cpp: a kernel built in process "
             "(one compile thread) is not told from a hit, and its lookup is not recorded")  # fmt: skip
    return hooks
