"""Provenance for AOT autograd and Inductor (``capture/node_causes.py`` reads the nodes): the FX node
being worked on, from ``Interpreter._set_current_node`` (AOT tracing, fake-tensor propagation) and,
installed once Inductor is imported, ``GraphLowering.set_current_node`` (lowering), the
scheduler's ``create_scheduler_node`` (scheduling), the scheduling backends' ``codegen_node`` and
``define_kernel`` (kernel -> origin nodes), and Inductor's kernel
builds (``capture.kernel_builds``). Each pushes the node's cause id on a per-thread stack; a sample
copies the innermost one, and the innermost of torch's own timed spans beside it."""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from typing import Any

from dynaprof.capture import kernel_builds, node_causes
from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private

#: what a lazy provenance hook that could not be installed costs the report
_WHOLE = "(its time shows as whole graph)"


def install_node_causes(recorder: CompileRecorder) -> None:
    """AOT tracing's node now; Inductor's hooks wait in ``recorder._lazy`` until it is imported."""
    interp = _private("torch.fx.interpreter").Interpreter
    wrap_node_context(recorder, interp, "_set_current_node")
    recorder._lazy = [
        ("torch._inductor.graph", f"provenance: lowering {_WHOLE}", functools.partial(install_lowering, recorder))
    ]
    for backend in ("cpp", "simd", "triton"):
        module = f"torch._inductor.codegen.{backend}"
        recorder._lazy.append(
            (module, f"provenance: {backend} codegen {_WHOLE}", functools.partial(install_scheduling, recorder, module))
        )
    recorder._lazy.append(
        (
            "torch._inductor.scheduler",
            f"provenance: scheduler nodes {_WHOLE}",
            functools.partial(install_scheduler_nodes, recorder),
        )
    )
    builds = functools.partial(kernel_builds.install, recorder)
    recorder._lazy.append(("torch._inductor.async_compile", f"provenance: kernel builds {_WHOLE}", builds))


def wrap_node_context(recorder: CompileRecorder, owner: Any, attr: str) -> None:
    """Wrap a ``@contextmanager`` method ``(self, node)`` that brackets work on one FX node."""
    orig = getattr(owner, attr)
    causes = recorder.causes
    # torch 2.4 has no phase span to install Inductor's hooks at (``recorder._install_lazy``): the
    # nodes AOT autograd and Inductor start on do it there, and only there (this is a hot path)
    install_lazy = "phases" not in recorder.hooks

    @functools.wraps(orig)
    @contextlib.contextmanager
    def wrapper(this: Any, node: Any, *a: Any, **k: Any) -> Any:
        tid = threading.get_ident()
        if recorder.current(tid) is None:
            with orig(this, node, *a, **k):
                yield
            return
        if install_lazy and recorder._lazy:
            recorder._install_lazy()
        depth = causes.enter(tid, recorder._node_cause_id(node))
        try:
            with orig(this, node, *a, **k):
                yield
        finally:
            causes.exit(tid, depth)

    setattr(owner, attr, wrapper)


def wrap_scheduled(recorder: CompileRecorder, owner: Any, attr: str, nodes_arg: int) -> None:
    """Wrap a method whose argument ``nodes_arg`` (after self) holds Inductor scheduler nodes;
    for ``define_kernel`` also remember the kernel name it returns."""
    orig = owner.__dict__[attr]
    causes = recorder.causes
    defines = attr == "define_kernel"

    @functools.wraps(orig)
    def wrapper(this: Any, *a: Any, **k: Any) -> Any:
        tid = threading.get_ident()
        win = recorder.current(tid)
        if win is None or len(a) <= nodes_arg:
            return orig(this, *a, **k)
        arg = a[nodes_arg]
        fx = node_causes.fx_nodes_of(arg if isinstance(arg, (list, tuple)) else [arg])
        ids = [recorder._node_cause_id(n) for n in fx]
        cid = recorder._combined_cause_id(ids)
        depth = causes.enter(tid, cid)
        try:
            out = orig(this, *a, **k)
        finally:
            causes.exit(tid, depth)
        if defines and isinstance(out, str):
            win.kernel_parts[out] = recorder._kernel_parts(fx, ids)
        return out

    setattr(owner, attr, wrapper)


def wrap_ir_node(recorder: CompileRecorder, owner: Any, attr: str) -> None:
    """Wrap a method ``(self, node)`` working on one Inductor IR node: the cause of the FX nodes it
    came from (``origins``); nothing is pushed for a node without any."""
    orig = owner.__dict__[attr]
    causes = recorder.causes

    @functools.wraps(orig)
    def wrapper(this: Any, node: Any, *a: Any, **k: Any) -> Any:
        tid = threading.get_ident()
        origins = getattr(node, "origins", None) if recorder.current(tid) is not None else None
        if not origins:
            return orig(this, node, *a, **k)
        depth = causes.enter(tid, recorder._combined_cause_id([recorder._node_cause_id(n) for n in origins]))
        try:
            return orig(this, node, *a, **k)
        finally:
            causes.exit(tid, depth)

    setattr(owner, attr, wrapper)


def install_scheduler_nodes(recorder: CompileRecorder) -> None:
    """The IR node the scheduler makes a scheduler node of: most of a small graph's scheduling
    (its reads, writes and loop body; the seed: half of ``Scheduler.__init__``). Fusion decisions
    weigh pairs of nodes and stay the whole graph's."""
    wrap_ir_node(recorder, _private("torch._inductor.scheduler").Scheduler, "create_scheduler_node")


def install_lowering(recorder: CompileRecorder) -> None:
    """The node Inductor lowers."""
    wrap_node_context(recorder, _private("torch._inductor.graph").GraphLowering, "set_current_node")


def install_scheduling(recorder: CompileRecorder, module: str) -> None:
    """The nodes a scheduling backend generates code for, and the kernels it defines."""
    mod = sys.modules[module]
    for obj in list(vars(mod).values()):
        if not isinstance(obj, type) or obj.__module__ != module or not obj.__name__.endswith("Scheduling"):
            continue
        if "codegen_node" in obj.__dict__:
            wrap_scheduled(recorder, obj, "codegen_node", 0)
        if "define_kernel" in obj.__dict__:
            wrap_scheduled(recorder, obj, "define_kernel", 1)
