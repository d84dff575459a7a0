"""The Inductor replay: which kernels would Inductor define for a run's graphs without their
parametrizations? Run after the script has ended, in a process of its own
(``python -m dynaprof.capture.replay GRAPHS OUT``: a JSON list of the run's ``replay_graph``
records, which the pipeline takes from its journal), never in the profiled one.

A parametrization can change how Inductor fuses the code around it (HiFi-GAN's weight norm adds
kernels that hold only a weight norm and the user's ``leaky_relu``): no single run shows which
kernels the plain model would have built. The profiled process keeps each graph with
parametrizations that Dynamo handed Inductor (``replay_graph`` records, ``hooks.replay_graphs``).
Here each one is rebuilt with its parametrizations folded (``replay_graph.folded_records``) and taken
through AOT autograd and Inductor's lowering, scheduling and code generation as
``torch._inductor.compile_fx.compile_fx``, with the kernel builders replaced by stubs: every kernel's
source is generated, none is compiled, and the compiled graph is never called.

Each kernel Inductor defines (``define_kernel`` of a scheduling backend) is written with what the
run's own kernel records are matched by (``ingest.kernel_match``): its frame key, the user causes of
its origin nodes (``node_causes``, the rule live capture uses), and how many of its nodes a
parametrization added (none here, unless folding missed one). Caches are off for the replay (it
must generate code, not load it); the compile threads are 1 (there is nothing to build).

Output: one JSON object ``{"kernels": [...], "graphs": n, "replayed": [frame keys], "failed":
[[key, reason]...], "pid": its process, "seconds": s}`` (``ingest.kernel_match.read_replay``); the exit status is 0
whenever that was written.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

from dynaprof.capture import node_causes
from dynaprof.capture.replay_graph import Unreplayable, folded_records, rebuild
from dynaprof.model.journal import ReplayGraph

#: what the replay sets before torch is imported: no cache may answer for the code generation, and
#: no worker pool is started for kernels that are never built
REPLAY_ENV = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
              "TORCHINDUCTOR_COMPILE_THREADS": "1"}  # fmt: skip


class Defined:
    """The kernels Inductor defines while one graph is replayed: name -> its record."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.kernels: dict[str, dict[str, Any]] = {}
        self.built: set[str] = set()


def _kernel_record(key: str, nodes: list[Any]) -> dict[str, Any]:
    distinct = {id(n): n for n in nodes}.values()
    causes = [node_causes.node_cause(n) or node_causes.UNKNOWN for n in distinct]
    users = sorted({(c[0], c[1], c[2]) for c in causes if c[3] == node_causes.CAUSE_USER})
    params = sum(1 for c in causes if c[3] == node_causes.CAUSE_PARAMETRIZATION)
    return {"key": key, "users": [list(u) for u in users], "nodes": len(causes), "param_nodes": params}


def _wrap_define(defined: Defined, owner: Any) -> None:
    orig = owner.__dict__["define_kernel"]

    @functools.wraps(orig)
    def define_kernel(this: Any, src: Any, nodes: Any, *a: Any, **k: Any) -> Any:
        name = orig(this, src, nodes, *a, **k)
        if isinstance(name, str) and defined.key is not None:
            fx = node_causes.fx_nodes_of(nodes if isinstance(nodes, (list, tuple)) else [nodes])
            defined.kernels[name] = _kernel_record(defined.key, fx)
        return name

    owner.define_kernel = define_kernel


class _Stub:
    """What a stubbed builder returns: a kernel that was never built (never called: the compiled
    graph is not run)."""

    def __init__(self, name: str | None) -> None:
        self.name = name

    def __call__(self, *a: Any, **k: Any) -> Any:
        raise RuntimeError("dynaprof replay: this kernel was not built")


def install_stubs(defined: Defined) -> None:
    """Kernel builders that build nothing, and the definitions recorded (replay process only)."""
    import importlib

    from dynaprof.capture.kernel_builds import BUILDERS, kernel_name
    from dynaprof.capture.torch_private import _private

    ac = _private("torch._inductor.async_compile").AsyncCompile
    for method in BUILDERS:
        if method not in ac.__dict__:
            continue

        def stub(this: Any, *a: Any, _method: str = method, **k: Any) -> Any:
            name = kernel_name(_method, a, k, sys._getframe(1))
            if name is not None:
                defined.built.add(name)
            return _Stub(name)

        setattr(ac, method, stub)
    for backend in ("cpp", "simd", "triton", "halide"):
        try:
            module = importlib.import_module(f"torch._inductor.codegen.{backend}")
        except Exception:  # a backend this torch or machine lacks: it defines nothing here
            continue
        for obj in list(vars(module).values()):
            if isinstance(obj, type) and obj.__module__ == module.__name__ and "define_kernel" in obj.__dict__:
                _wrap_define(defined, obj)


def replay_one(graph: ReplayGraph, defined: Defined) -> list[dict[str, Any]]:
    """The kernels Inductor defines for ``graph`` folded. Raises Unreplayable or torch's error."""
    import importlib

    import torch

    from dynaprof.capture.torch_private import _private

    for module in graph.get("imports") or []:  # what registered its custom ops, as in the run
        try:
            importlib.import_module(module)
        except Exception as e:
            raise Unreplayable(f"cannot import {module}, which defines its custom ops ({type(e).__name__})") from e
    records, _ = folded_records(graph)
    gm, inputs = rebuild(records, graph["traces"])
    compile_fx = _private("torch._inductor.compile_fx").compile_fx
    defined.key, defined.kernels, defined.built = graph["key"], {}, set()
    try:
        with torch.set_grad_enabled(graph["grad"]):
            compile_fx(gm, inputs, config_patches=graph.get("config") or None)
    finally:
        defined.key = None
    return [rec for name, rec in sorted(defined.kernels.items()) if name in defined.built or not defined.built]


def replay(graphs: list[ReplayGraph]) -> dict[str, Any]:
    t0 = time.perf_counter()
    defined = Defined()
    install_stubs(defined)
    kernels: list[dict[str, Any]] = []
    failed: list[list[str]] = []
    replayed: list[str] = []
    for graph in graphs:
        try:
            kernels += replay_one(graph, defined)
            replayed.append(graph["key"])
        except Unreplayable as e:
            failed.append([graph["key"], str(e)])
        except Exception as e:  # torch's own failure on the folded graph: that graph is not compared
            failed.append([graph["key"], f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"])
    # a frame is compared only where every graph of it was replayed
    bad = {key for key, _ in failed}
    return {"kernels": [k for k in kernels if k["key"] not in bad], "graphs": len(replayed),
            "replayed": sorted(set(replayed) - bad), "failed": failed, "pid": os.getpid(),
            "seconds": round(time.perf_counter() - t0, 6)}


def has_graphs(journal: Path) -> bool:
    """Whether a journal holds a graph to replay (a scan of its lines, parsing none)."""
    try:
        with open(journal, encoding="utf-8", errors="replace") as fh:
            return any('"replay_graph"' in line for line in fh)
    except OSError:
        return False


def launch_replay(graphs: Path, out: Path, log: Path, env: dict[str, str]) -> tuple[Any, str | None]:
    """Run the replay of the graphs in file ``graphs`` in a process of its own (parent side): its
    output (``read_replay``'s input) and None, or None and why it failed in one line."""
    import subprocess

    root = str(Path(__file__).resolve().parents[2])  # dynaprof importable, installed or not
    path = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "dynaprof.capture.replay", str(graphs), str(out)]
    with open(log, "wb") as fh:
        rc = subprocess.call(cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                             env={**env, **REPLAY_ENV, "PYTHONPATH": path})  # fmt: skip
    try:
        with open(out, encoding="utf-8") as fh:
            return json.load(fh), None
    except (OSError, ValueError):
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        return None, f"exit status {rc}" + (f": {tail[0][:200]}" if tail else "")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m dynaprof.capture.replay GRAPHS OUT", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        graphs = [cast(ReplayGraph, g) for g in json.load(fh) if isinstance(g, dict)]
    for name, value in REPLAY_ENV.items():
        os.environ[name] = value
    result = replay(graphs)
    tmp = argv[1] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
