"""``InstructionTranslatorBase.log_graph_break``: where each graph break happened (reason, file,
line: the place torch's own log names), once per break (torch marks an exception it logged)."""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_graph_breaks(recorder: CompileRecorder) -> None:
    ITB = _private("torch._dynamo.symbolic_convert").InstructionTranslatorBase
    config = _private("torch._dynamo.config")
    guards = _private("torch._guards")

    orig = ITB.log_graph_break

    def site(tx: Any, exc: Any) -> tuple[str | None, int | None]:
        """Where torch itself says the break is (its log's "Graph break in user code at"): the
        innermost frame of the break's user stack; the translator's own line with nested graph
        breaks on, or where there is no stack."""
        try:
            if not (getattr(config, "nested_graph_breaks", False) and getattr(tx, "parent", None) is not None):
                stack = getattr(exc, "real_stack", None)
                if stack is None:
                    stack = guards.TracingContext.extract_stack()
                if stack:
                    return str(stack[-1].filename), int(stack[-1].lineno)
        except Exception:  # a moved internal: the translator's own line
            pass
        return getattr(getattr(tx, "f_code", None), "co_filename", None), getattr(tx, "lineno", None)

    @functools.wraps(orig)
    def log_graph_break(tx: Any, code_options: Any, reason: Any, exc: Any, *a: Any, **k: Any) -> Any:
        try:
            win = recorder.current(threading.get_ident())
            if win is not None and not getattr(exc, "logged", False):
                file, line = site(tx, exc)
                win.graph_break_sites.append({"reason": str(reason)[:2000], "file": file, "line": line})
        except Exception:
            pass
        return orig(tx, code_options, reason, exc, *a, **k)

    ITB.log_graph_break = log_graph_break
