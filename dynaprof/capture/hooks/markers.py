"""The code objects the stack walker marks: Dynamo's compile entry for every walker; the
translator's ``run``, property resolution and the restart loop only for the legacy walker
(``capture/legacy_walker.py``, test-only), which reads them through frame locals."""

from __future__ import annotations

import inspect
from typing import Any

from dynaprof.capture.hooks.properties import property_key
from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.stacks import FunctionKey, Markers
from dynaprof.capture.torch_private import _private


def _attempt_loop_codes(module: Any) -> set[Any]:
    """Code objects of convert_frame that hold the restart loop's ``attempt`` local (2.13:
    compile_frame; 2.4: _compile.<locals>.compile_inner), nested functions included."""
    found: set[Any] = set()
    todo = []
    for v in list(vars(module).values()):
        try:
            todo.append(getattr(inspect.unwrap(v), "__code__", None))
        except Exception:  # odd objects (mocks, cycles of __wrapped__) are not functions we want
            continue
    while todo:
        code = todo.pop()
        if code is None or not hasattr(code, "co_varnames"):
            continue
        if "attempt" in code.co_varnames and code.co_filename == getattr(module, "__file__", None):
            found.add(code)
        todo.extend(c for c in code.co_consts if hasattr(c, "co_varnames"))
    return found


def install_markers(recorder: CompileRecorder) -> None:
    """The compile entry for every walker; the rest only for the legacy walker (test-only),
    which reads them through frame locals."""
    cf = _private("torch._dynamo.convert_frame")
    ITB = _private("torch._dynamo.symbolic_convert").InstructionTranslatorBase

    run_code = inspect.unwrap(ITB.run).__code__
    prop_codes = frozenset({recorder._rdd_code}) if recorder._rdd_code is not None else frozenset()
    attempt_codes = frozenset(_attempt_loop_codes(cf))

    def traced_code(local_vars: dict[str, Any]) -> tuple[Any, int] | None:
        tx = local_vars.get("self")
        code = getattr(tx, "f_code", None)
        return (code, 0) if code is not None else None

    def prop_key(local_vars: dict[str, Any]) -> FunctionKey | None:
        got = property_key(local_vars.get("self"), str(local_vars.get("name")), local_vars.get("type_attr"))
        return got[0] if got is not None else None

    root = recorder._compile_code
    recorder.markers = Markers(
        frozenset({run_code}),
        prop_codes,
        traced_code,
        prop_key,
        attempt_codes,
        frozenset({root}) if root is not None else frozenset(),
    )
