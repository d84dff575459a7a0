"""``SubmodCompiler.compile_submod``: each per-bucket subgraph compile of DDP's graph split
(``optimize_ddp``), as a ``ddp_bucket submod_N`` span of the frame's compile."""

from __future__ import annotations

import functools
import sys
import threading
import time
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.model.journal import DDP_BUCKET_SPAN

DDP_MODULE = "torch._dynamo.backends.distributed"


def install_ddp_buckets(recorder: CompileRecorder) -> None:
    """Per-bucket compiles of a DDP model's graph. With ``torch._dynamo.config.optimize_ddp`` on,
    ``DDPOptimizer.compile_fn`` splits the frame's graph where DDP's gradient buckets end and
    ``SubmodCompiler.compile_submod`` runs the backend on each piece, inside the frame's one
    compile. Each of those compiles becomes a ``span`` record ``ddp_bucket submod_N`` in the
    frame's window (so a phase of the frame, as torch's phase events are), its end carrying the
    bucket's index, the number of buckets, and the bucket's parameter count and bytes. Inert
    outside a compile window; strings and numbers only, nothing of the graph is kept.

    The module loads with the backends' registry (``torch.compile(..., backend="name")``), often
    after the hooks: installed then, at the next phase event, like Inductor's provenance hooks
    (torch 2.4 has no phase events: at the next compile window's start, which on 2.4 comes after
    ``convert_frame`` imported the split for a DDP model). A script that never uses DDP gets no
    warning: nothing of it was missed."""

    def install() -> None:
        try:
            _install_ddp_buckets(recorder, sys.modules[DDP_MODULE])
        except Exception as e:  # a moved internal: the bucket compiles stay in the frame's backend compile
            recorder.warn(f"DDP bucket compiles not captured ({type(e).__name__}: {e}); "
                          "their time shows in the frame's backend compile")

    if DDP_MODULE in sys.modules:
        _install_ddp_buckets(recorder, sys.modules[DDP_MODULE])
    elif "phases" not in recorder.hooks:
        # torch < 2.5: no phase event to install it at, but torch imports the split before it opens
        # the DDP model's compile (convert_frame's DDPOptimizer): installed as that window opens
        recorder._lazy_at_window.append((DDP_MODULE, "DDP bucket compiles", install))
    else:
        recorder._lazy.append((DDP_MODULE, "DDP bucket compiles", install))


def _install_ddp_buckets(recorder: CompileRecorder, module: Any) -> None:
    submod_compiler = module.SubmodCompiler
    orig_compile = submod_compiler.compile_submod
    orig_buckets = module.pretty_print_buckets
    sizes = threading.local()  # this thread's latest split: [(parameters, bytes)] per bucket

    @functools.wraps(orig_buckets)
    def pretty_print_buckets(buckets: Any, *a: Any, **k: Any) -> Any:
        try:
            if recorder.current(threading.get_ident()) is not None:
                sizes.buckets = [(len(b.params), int(b.size)) for b in buckets]
        except Exception:
            pass
        return orig_buckets(buckets, *a, **k)

    @functools.wraps(orig_compile)
    def compile_submod(this: Any, input_mod: Any, *a: Any, **k: Any) -> Any:
        tid = threading.get_ident()
        win = recorder.current(tid)
        if win is None:
            return orig_compile(this, input_mod, *a, **k)
        name = "submod_?"
        args: dict[str, Any] = {}
        try:
            name = next((str(n) for n, m in this.module.named_children() if m is input_mod), name)
            known = getattr(sizes, "buckets", None) or []
            index = int(name[len("submod_"):]) if name[len("submod_"):].isdigit() else None
            if index is not None:
                args["bucket"] = index
                if index < len(known):
                    args.update(buckets=len(known), params=known[index][0], param_bytes=known[index][1])
        except Exception:
            pass
        span = f"{DDP_BUCKET_SPAN} {name}"
        recorder.emit({"t": "span", "name": span, "ph": "B", "tid": tid, "ts": recorder.rel(time.time_ns()),
                       "key": win.key})
        try:
            return orig_compile(this, input_mod, *a, **k)
        finally:
            recorder.emit({"t": "span", "name": span, "ph": "E", "tid": tid, "ts": recorder.rel(time.time_ns()),
                           "key": win.key, "args": args})

    module.pretty_print_buckets = pretty_print_buckets
    submod_compiler.compile_submod = compile_submod
