"""``convert_frame._compile``, Dynamo's compile entry: wrapped to open a compile window round each
frame compile (id, code, thread, wall time, call site, outcome), which starts and stops the sampler."""

from __future__ import annotations

import functools
import types
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_compile_windows(recorder: CompileRecorder) -> None:
    cf = _private("torch._dynamo.convert_frame")
    counters = _private("torch._dynamo.utils").counters

    recorder._counters = counters
    orig = cf._compile
    recorder._compile_code = orig.__code__
    # torch 2.4 passes no closure, only the frame's locals (which hold its free variables), 5th is compiler_fn
    older = "closure" not in orig.__code__.co_varnames[: orig.__code__.co_argcount]

    @functools.wraps(orig)
    def _compile(*args: Any, **kwargs: Any) -> Any:
        code = args[0] if args else kwargs.get("code")
        cid = kwargs.get("compile_id")
        closure = args[4] if len(args) > 4 and not older else kwargs.get("closure")
        if older and "fn" in getattr(code, "co_freevars", ()):  # torch.compile(module)'s wrapper
            closure = _cells(code, args[2] if len(args) > 2 else kwargs.get("locals"))
        win = recorder._begin(code, None if cid is None else str(cid), closure)
        try:
            result = orig(*args, **kwargs)
        except BaseException as e:
            recorder._end(win, None, e)
            raise
        recorder._end(win, result, None)
        return result

    cf._compile = _compile


def _cells(code: Any, f_locals: Any) -> tuple[Any, ...] | None:
    """The closure ``wrapped_callable`` reads, from the locals torch 2.4 hands ``_compile`` (the
    frame's, free variables included); fresh cells, dropped with the window's start."""
    if not isinstance(f_locals, dict):
        return None
    return tuple(types.CellType(f_locals[n]) if n in f_locals else types.CellType() for n in code.co_freevars)
