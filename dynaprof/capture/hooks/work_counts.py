"""``compile_fx._compile_fx_inner`` (torch 2.4: ``fx_codegen_and_compile``), Inductor's compile of
one graph (a forward, or a backward): the IR nodes and kernels Inductor made of it (its own
counters in ``torch._inductor.metrics``, read before and after, which a cache hit advances too).
The graph's own size, the ops after AOT autograd, is counted for every AOT backend alike where AOT
autograd hands it over (``hooks.aot_graphs``). Exact counts: the same program, torch and config
give the same numbers on every run, so ``compare`` shows their change without noise. One ``work``
record per graph, keyed by the window it compiled in (a lazy backward's own)."""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private
from dynaprof.model.journal import Work


def _counter(metrics: Any, name: str) -> int | None:
    value = getattr(metrics, name, None)
    return value if type(value) is int else None


def _delta(before: int | None, after: int | None) -> int | None:
    """A counter's advance over one compile; None when unknown or reset in between (negative)."""
    if before is None or after is None or after < before:
        return None
    return after - before


#: Inductor's compile entry: hooked once it is imported (importing it here would change a program
#: that never uses Inductor)
COMPILE_FX = "torch._inductor.compile_fx"


def install_work_counts(recorder: CompileRecorder) -> None:
    """Wait for Inductor (``recorder._lazy``): its compile entry is wrapped once it is imported."""
    recorder._lazy.append((COMPILE_FX, "work counts: Inductor's IR nodes and kernels",
                           functools.partial(_install, recorder)))


def _install(recorder: CompileRecorder) -> None:
    cfx = _private(COMPILE_FX)
    metrics = _private("torch._inductor.metrics")
    # called by name from compile_fx_inner: patching the module reaches it. Torch 2.4 has no
    # _compile_fx_inner (compile_fx binds compile_fx_inner as a default argument, out of reach);
    # there its codegen step, looked up by name too, is wrapped: an FX graph cache hit skips it,
    # so a hit's counts stay unknown
    older = getattr(cfx, "_compile_fx_inner", None) is None
    orig = cfx.fx_codegen_and_compile if older else cfx._compile_fx_inner

    @functools.wraps(orig)
    def _compile_fx_inner(gm: Any, example_inputs: Any, *a: Any, **k: Any) -> Any:
        win = recorder.current(threading.get_ident())
        if win is None:
            return orig(gm, example_inputs, *a, **k)
        kernels0, ir0 = _counter(metrics, "generated_kernel_count"), _counter(metrics, "ir_nodes_pre_fusion")
        out = orig(gm, example_inputs, *a, **k)
        rec: Work = {
            "t": "work", "key": win.key,
            "ir_nodes": _delta(ir0, _counter(metrics, "ir_nodes_pre_fusion")),
            "kernels": _delta(kernels0, _counter(metrics, "generated_kernel_count")),
        }  # fmt: skip
        recorder.emit(rec)
        return out

    if older:
        cfx.fx_codegen_and_compile = _compile_fx_inner
    else:
        cfx._compile_fx_inner = _compile_fx_inner
