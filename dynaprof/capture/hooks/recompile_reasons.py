"""``convert_frame.get_and_maybe_log_recompilation_reasons``: every failing guard of every cache
entry (torch's metrics keep only the first entry's); strings only, the frame is never kept."""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_recompile_reasons(recorder: CompileRecorder) -> None:
    cf = _private("torch._dynamo.convert_frame")
    name = next((n for n in ("get_and_maybe_log_recompilation_reasons", "get_and_maybe_log_recompilation_reason")
                 if callable(getattr(cf, n, None))), None)
    if name is None:
        raise AttributeError("convert_frame has no get_and_maybe_log_recompilation_reason(s)")
    orig = getattr(cf, name)

    @functools.wraps(orig)
    def reasons(*a: Any, **k: Any) -> Any:
        out = orig(*a, **k)
        try:
            win = recorder.current(threading.get_ident())
            if win is not None and isinstance(out, (list, tuple)):
                win.recompile_reasons = [str(r)[:4000] for r in out][:64]  # strings only
        except Exception:
            pass
        return out

    setattr(cf, name, reasons)
