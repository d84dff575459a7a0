"""What a ``compile_start`` record says of where a compile came from: the user frames that led to
it, and the user callable behind torch's wrapper frame. Reads frames and closures only; keeps no
reference to either."""

from __future__ import annotations

import sys
import types
from typing import Any

from dynaprof.capture.own_code import own_file
from dynaprof.model.torch_files import torch_file


def _user_frame(filename: str) -> bool:
    f = filename.replace("\\", "/")
    return not (torch_file(f) or own_file(f) or f.startswith("<frozen") or "/runpy.py" in f)


def call_site(limit: int = 12) -> list[list[Any]]:
    """The user frames (outermost first) on the current thread that led to this compile."""
    out = []
    f = sys._getframe(2)
    while f is not None:
        if _user_frame(f.f_code.co_filename):
            out.append([f.f_code.co_name, f.f_code.co_filename, f.f_lineno])
        f = f.f_back  # type: ignore[assignment]
    return list(reversed(out[:limit]))


def _is_module_class(cls: type) -> bool:
    return any(k.__name__ == "Module" and k.__module__ == "torch.nn.modules.module" for k in cls.__mro__)


def wrapped_callable(code: Any, closure: Any) -> list[Any] | None:
    """The user callable behind torch's wrapper frame, as ``[label, file, line]``.

    ``torch.compile(module)`` compiles ``external_utils.wrap_inline``'s ``inner``, whose closure
    cell ``fn`` holds the module: its class and its ``forward`` are what the user wrote. Reads
    only the closure torch passes to ``_compile`` and class dictionaries (no descriptor, no user
    code runs); keeps no reference."""
    filename = str(getattr(code, "co_filename", "")).replace("\\", "/")
    freevars = getattr(code, "co_freevars", ())
    if not torch_file(filename) or "fn" not in freevars or not isinstance(closure, tuple):
        return None
    try:
        obj = closure[freevars.index("fn")].cell_contents
    except (IndexError, ValueError, AttributeError):
        return None
    cls = type(obj)
    label: str | None = None
    target: Any = None
    if cls is types.FunctionType:
        label, target = str(obj.__qualname__), obj
    elif cls is types.MethodType:
        target = obj.__func__
        label = str(getattr(target, "__qualname__", "?"))
    elif _is_module_class(cls):
        label = cls.__name__
        target = next((k.__dict__["forward"] for k in cls.__mro__ if "forward" in k.__dict__), None)
    obj = None
    fcode = getattr(target, "__code__", None) if type(target) is types.FunctionType else None
    if label is None or fcode is None:
        return None
    return [label, fcode.co_filename, fcode.co_firstlineno]
