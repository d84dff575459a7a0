"""``InstructionTranslatorBase.log_graph_break``: where each graph break happened (reason, file,
line), once per break (torch marks an exception it logged)."""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_graph_breaks(recorder: CompileRecorder) -> None:
    ITB = _private("torch._dynamo.symbolic_convert").InstructionTranslatorBase

    orig = ITB.log_graph_break

    @functools.wraps(orig)
    def log_graph_break(tx: Any, code_options: Any, reason: Any, exc: Any, *a: Any, **k: Any) -> Any:
        try:
            win = recorder.current(threading.get_ident())
            if win is not None and not getattr(exc, "logged", False):
                f_code = getattr(tx, "f_code", None)
                win.graph_break_sites.append(
                    {
                        "reason": str(reason)[:2000],
                        "file": getattr(f_code, "co_filename", None),
                        "line": getattr(tx, "lineno", None),
                    }
                )
        except Exception:
            pass
        return orig(tx, code_options, reason, exc, *a, **k)

    ITB.log_graph_break = log_graph_break
