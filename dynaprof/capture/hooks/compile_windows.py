"""``convert_frame._compile``, Dynamo's compile entry: wrapped to open a compile window round each
frame compile (id, code, thread, wall time, call site, outcome), which starts and stops the sampler."""

from __future__ import annotations

import functools
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_compile_windows(recorder: CompileRecorder) -> None:
    cf = _private("torch._dynamo.convert_frame")
    counters = _private("torch._dynamo.utils").counters

    recorder._counters = counters
    orig = cf._compile
    recorder._compile_code = orig.__code__

    @functools.wraps(orig)
    def _compile(*args: Any, **kwargs: Any) -> Any:
        code = args[0] if args else kwargs.get("code")
        cid = kwargs.get("compile_id")
        closure = args[4] if len(args) > 4 else kwargs.get("closure")
        win = recorder._begin(code, None if cid is None else str(cid), closure)
        try:
            result = orig(*args, **kwargs)
        except BaseException as e:
            recorder._end(win, None, e)
            raise
        recorder._end(win, result, None)
        return result

    cf._compile = _compile
