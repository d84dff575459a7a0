"""Runs a script as ``python SCRIPT ARGS`` would, timing Inductor's C++ toolchain setup and builds.

Wraps ``torch._inductor.codecache._precompile_header`` (the header's preprocessing and build),
``pick_vec_isa`` (the vector-ISA probe) and ``CppPythonBindingsCodeCache.load_pybinding`` (a C++
kernel built and loaded in process: one compile thread) and prints one JSON line to stderr at
exit: each call's start (seconds since this runner started), its wall seconds, the CPU seconds of
the compiler processes it ran, the header file it returned (its name is a hash of the header's
preprocessed text and compile command, so two runs with the same name built the same header) and
a kernel's source length. It measures the toolchain and the builds themselves, with or without
dynaprof around it (``bench_toolchain_order.py``, ``bench_build_overhead.py``).

    python benchmarks/causes/time_toolchain.py SCRIPT [ARGS...]
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import time
from collections.abc import Callable
from typing import Any

T0 = time.perf_counter()
CALLS: list[dict[str, Any]] = []


def _timed(module: Any, name: str) -> None:
    fn: Callable[..., Any] = getattr(module, name)

    def run(*args: Any, **kwargs: Any) -> Any:
        start, cpu = time.perf_counter(), os.times()
        result = fn(*args, **kwargs)
        wall, after = time.perf_counter() - start, os.times()
        if wall > 0.01:  # later calls are cached (functools.cache): nothing to time
            children = after.children_user + after.children_system - cpu.children_user - cpu.children_system
            CALLS.append({"what": name, "start_s": round(start - T0, 3), "wall_s": round(wall, 3),
                          "compiler_cpu_s": round(children, 3),
                          "header": os.path.basename(result) if isinstance(result, str) else None})
        return result

    setattr(module, name, run)


def _timed_method(cls: Any, fn: Callable[..., Any]) -> None:
    """``load_pybinding(argtypes, source)``, a classmethod: each in-process kernel build."""

    def run(klass: Any, argtypes: Any, source: Any, *a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        result = fn(klass, argtypes, source, *a, **k)
        CALLS.append({"what": "load_pybinding", "start_s": round(start - T0, 3),
                      "wall_s": round(time.perf_counter() - start, 3), "source_chars": len(source)})
        return result

    cls.load_pybinding = classmethod(run)


def main() -> None:
    import torch._inductor.codecache as codecache

    for name in ("_precompile_header", "pick_vec_isa"):
        if hasattr(codecache, name):
            _timed(codecache, name)
    bindings = codecache.CppPythonBindingsCodeCache
    if "load_pybinding" in vars(bindings):
        _timed_method(bindings, vars(bindings)["load_pybinding"].__func__)
    atexit.register(lambda: print("TOOLCHAIN " + json.dumps(CALLS), file=sys.stderr, flush=True))
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
