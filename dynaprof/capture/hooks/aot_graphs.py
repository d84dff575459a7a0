"""The graphs AOT autograd hands its backend's compilers, for every AOT-based backend (``aot_eager``,
Inductor, ``aot_eager_decomp_partition``, ``aot_ts``, ...): ``backends.common.aot_module_simplified``,
as ``AotAutograd.__call__`` calls it, gets its ``fw_compiler``, ``bw_compiler`` and
``inference_compiler`` each wrapped with a count of the ``call_function`` nodes of the graph it is
handed, then calls them as torch would. One ``aot_graph`` record per graph, keyed by the window it
is compiled in: the forward or inference graph in the frame's, the backward in its lazy compile's
(``:bw``; or in the forward's, where AOT autograd compiles it at once: symbolic sizes saved for it).

Nothing of the program changes: each wrapper reads the graph's node list and calls the compiler
with the same arguments, and returns what it returns; a compiler that is a
``SerializableAOTDispatchCompiler`` (Inductor's, which AOT autograd's cache looks for) is copied
with its ``compiler_fn`` wrapped, so it keeps its type, and torch's own object is left as it is.
Outside a compile window (another profiler's block, after ``dynaprof.profile()``) the call goes
straight to torch's function. Where AOT autograd's cache loads a compiled graph, no compiler is
called and nothing is counted (as for Inductor's IR nodes and kernels)."""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Callable
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private
from dynaprof.model.journal import AotGraph

#: where ``AotAutograd`` looks up ``aot_module_simplified`` (a name it imported): hooked once it is
#: imported (a backend lookup imports it; importing it here would load AOT autograd into any program)
AOT_COMMON = "torch._dynamo.backends.common"
#: the compilers ``aot_module_simplified`` takes by keyword
COMPILERS = ("fw_compiler", "bw_compiler", "inference_compiler")


def graph_ops(gm: Any) -> int | None:
    """The ``call_function`` nodes of an FX graph module (a higher-order op's body, held in a
    submodule, is one node: its call); None when it has no graph."""
    n = 0
    try:
        for node in gm.graph.nodes:  # a loop, not a generator: one frame, which Dynamo skips
            n += getattr(node, "op", None) == "call_function"
    except Exception:
        return None
    return n


def install_aot_graphs(recorder: CompileRecorder) -> None:
    """Wait for ``backends.common`` (``recorder._lazy``): its ``aot_module_simplified`` is wrapped
    once it is imported (a backend lookup, at ``torch.compile``, imports it)."""
    entry = (AOT_COMMON, "ops after AOT autograd", functools.partial(_install, recorder))
    # before torch 2.5 there are no phase events: install it as the first compile window opens
    (recorder._lazy if "phases" in recorder.hooks else recorder._lazy_at_window).append(entry)


def _counted(fn: Callable[..., Any], recorder: CompileRecorder, gm: Any, *a: Any, **k: Any) -> Any:
    """One call of a wrapped compiler: record its graph's ops in the window it runs in, then compile."""
    win = recorder.current(threading.get_ident())
    if win is not None:
        rec: AotGraph = {"t": "aot_graph", "key": win.key, "ops": graph_ops(gm)}
        recorder.emit(rec)
    return fn(gm, *a, **k)


def _lazy_backward(fn: Callable[..., Any], recorder: CompileRecorder, gm: Any, *a: Any, **k: Any) -> Any:
    """The backward compiler, on a torch without phase events (2.4): called outside any window, it
    is AOT autograd's lazy backward compile (at the first ``.backward()``, under the forward's
    compile context), which later torch announces with ``entire_backward_compile``: its window."""
    tid = threading.get_ident()
    if recorder.current(tid) is not None or "phases" in recorder.hooks:
        return _counted(fn, recorder, gm, *a, **k)
    recorder._begin_aux("backward", None, tid, {})
    try:
        return _counted(fn, recorder, gm, *a, **k)
    finally:
        recorder._end_aux("backward", tid)


def _count(fn: Callable[..., Any], recorder: CompileRecorder, backward: bool = False) -> Callable[..., Any]:
    return functools.update_wrapper(functools.partial(_lazy_backward if backward else _counted, fn, recorder), fn)


def _counting(compiler: Any, recorder: CompileRecorder, serializable: type | None, backward: bool = False) -> Any:
    """``compiler`` with a count of each graph it is handed (``backward``: and the lazy backward's window)."""
    if serializable is not None and isinstance(compiler, serializable):
        twin: Any = copy.copy(compiler)  # keeps its type (AOT autograd's cache asks for it); torch's own is untouched
        twin.compiler_fn = _count(twin.compiler_fn, recorder, backward)
        return twin
    return _count(compiler, recorder, backward) if callable(compiler) else compiler


def _install(recorder: CompileRecorder) -> None:
    common = _private(AOT_COMMON)
    orig = common.aot_module_simplified
    if "aot_module_simplified" not in common.AotAutograd.__call__.__code__.co_names:
        raise LookupError("AotAutograd no longer calls backends.common.aot_module_simplified")  # a warning
    # a lazy backward compiles from inside autograd's backward, which compiled code may have called
    # with Dynamo's frame callback set: Dynamo must run our frames as they are, never trace them (a
    # frame holding tensors would be compiled), as it does torch's own; callees are not affected
    skip_code = _private("torch._dynamo.eval_frame").skip_code
    try:  # torch 2.6+: Inductor's compilers; older ones are plain functions
        serializable: type | None = _private("torch._functorch._aot_autograd.schemas").SerializableAOTDispatchCompiler
    except Exception:
        serializable = None

    def aot_module_simplified(mod: Any, args: Any, *a: Any, **k: Any) -> Any:
        if not a and recorder.current(threading.get_ident()) is not None:
            for name in COMPILERS:
                if k.get(name) is not None:
                    k[name] = _counting(k[name], recorder, serializable, name == "bw_compiler")
        return orig(mod, args, *a, **k)

    for code in (_counted.__code__, _lazy_backward.__code__, graph_ops.__code__, aot_module_simplified.__code__):
        skip_code(code)
    common.aot_module_simplified = functools.wraps(orig)(aot_module_simplified)
