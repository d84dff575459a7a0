"""``InstructionTranslatorBase.run``: the traced user stack for samples (pushed and popped as ids on
``TracedStacks``: samples never read frame locals) and the attempt index (one root translator runs
per attempt)."""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_traced_stack(recorder: CompileRecorder) -> None:
    ITB = _private("torch._dynamo.symbolic_convert").InstructionTranslatorBase

    orig = ITB.run
    traced = recorder.traced

    @functools.wraps(orig)
    def run(tx: Any, *a: Any, **k: Any) -> Any:
        tid = threading.get_ident()
        win = recorder.current(tid)
        code = getattr(tx, "f_code", None)
        if win is None or code is None:
            return orig(tx, *a, **k)
        if traced.depth(tid) <= win.traced_base:  # the root translator: one per attempt
            win.root_runs += 1
            win.attempt = win.root_runs - 1
        depth = traced.enter(tid, recorder.table.code_id(code, "traced"))
        try:
            return orig(tx, *a, **k)
        finally:
            traced.exit(tid, depth)

    ITB.run = run
