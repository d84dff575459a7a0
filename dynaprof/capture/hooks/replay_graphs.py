"""The graphs with parametrizations that Dynamo hands Inductor, kept as data for the replay
(``capture.replay``): ``torch._inductor.compile_fx.compile_fx``, which Inductor's backend looks up
when it is called (``torch.compile()``'s default backend, ``mode=``/``options=`` included), is
wrapped once Inductor's module is imported. In a compile window, the graph it is handed is scanned
for a node a parametrization added; only such a graph is described (``replay_graph.describe``:
ops, names, provenance, tensor metadata; no value) into a ``replay_graph`` record, or a
``replay_skipped`` record says why it cannot be. Then torch's function is called with the same
arguments. A graph without parametrizations costs one pass over its nodes' metadata; nothing is
replayed here (the replay runs after the script, in its own process)."""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture import replay_graph
from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private

COMPILE_FX = "torch._inductor.compile_fx"


def install_replay_graphs(recorder: CompileRecorder) -> None:
    """Wait for Inductor's ``compile_fx`` module (``recorder._lazy``), then wrap ``compile_fx``."""
    entry = (COMPILE_FX, "the Inductor replay's graphs (the parametrization's kernels are split by node only)",
             functools.partial(_install, recorder))  # fmt: skip
    (recorder._lazy if "phases" in recorder.hooks else recorder._lazy_at_window).append(entry)


def _config(patches: Any) -> dict[str, Any]:
    """The JSON-safe part of the config patches ``compile_fx`` was given (``mode=``, ``options=``)."""
    if not isinstance(patches, dict):
        return {}
    return {k: v for k, v in patches.items() if isinstance(k, str) and isinstance(v, (bool, int, float, str))}


def _install(recorder: CompileRecorder) -> None:
    module = _private(COMPILE_FX)
    orig = module.compile_fx
    local = threading.local()

    @functools.wraps(orig)
    def compile_fx(gm: Any, example_inputs: Any, *a: Any, **k: Any) -> Any:
        win = recorder.current(threading.get_ident())
        if win is None or getattr(local, "inside", False):  # compile_fx calls itself: the outer graph only
            return orig(gm, example_inputs, *a, **k)
        local.inside = True
        try:
            _keep(recorder, win.key, gm, example_inputs, k.get("config_patches"))
            return orig(gm, example_inputs, *a, **k)
        finally:
            local.inside = False

    module.compile_fx = compile_fx


def _keep(recorder: CompileRecorder, key: str, gm: Any, example_inputs: Any, patches: Any) -> None:
    try:
        if not replay_graph.has_parametrization(gm):
            if replay_graph.calls_parametrized_module(gm):  # torch 2.4: said, never a silent "nothing to replay"
                raise replay_graph.Unreplayable(
                    "this torch calls each parametrized module's forward as one op (torch 2.4): no node of the "
                    "graph is a parametrization's, so the kernels only the parametrization makes are unknown")
            return
        rec = replay_graph.describe(gm, example_inputs, key)
        config = _config(patches)
        if config:
            rec["config"] = config
        recorder.emit(rec)
    except replay_graph.Unreplayable as e:
        recorder.emit({"t": "replay_skipped", "key": key, "reason": str(e)})
    except Exception as e:  # a profiler's bookkeeping never fails the compile
        recorder.emit({"t": "replay_skipped", "key": key, "reason": f"{type(e).__name__}: {e}"[:300]})
