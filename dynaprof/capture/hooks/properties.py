"""``UserDefinedObjectVariable.resolve_data_descriptor``: exact time and count per traced
``@property`` (parametrizations inject one per parameter), pushed on the traced stack while it runs."""

from __future__ import annotations

import functools
import threading
import time
import types
from typing import Any

from dynaprof.capture.recorder import CompileRecorder, PropStat, Window
from dynaprof.capture.stacks import FunctionKey
from dynaprof.capture.torch_private import _private

PARAMETRIZE_MODULE = "torch.nn.utils.parametrize"


def property_key(vt: Any, name: str, type_attr: Any) -> tuple[FunctionKey, PropStat] | None:
    """Label a property Dynamo resolves: ("Linear.weight", ...) for parametrized Linear."""
    fget = getattr(type_attr, "fget", None)
    if not isinstance(type_attr, property) or fget is None:
        return None
    value = getattr(vt, "value", None)
    owner = type(value).__name__ if value is not None else "?"
    plain = isinstance(fget, types.FunctionType)  # anything else could run user code on getattr
    parametrized = plain and fget.__module__ == PARAMETRIZE_MODULE
    shown = owner
    if parametrized and owner.startswith("Parametrized") and len(owner) > len("Parametrized"):
        shown = owner[len("Parametrized") :]  # the user's class: ParametrizedLinear -> Linear
    label = f"{shown}.{name}"
    code = fget.__code__ if plain else None
    gfile = code.co_filename if code is not None else "?"
    gline = code.co_firstlineno if code is not None else 0
    return (label, gfile, gline, "property"), PropStat(label, owner, name, gfile, gline, parametrized)


def install_properties(recorder: CompileRecorder) -> None:
    UDO = _private("torch._dynamo.variables.user_defined").UserDefinedObjectVariable

    orig = UDO.resolve_data_descriptor
    recorder._rdd_code = orig.__code__

    @functools.wraps(orig)
    def resolve_data_descriptor(vt: Any, tx: Any, name: Any, type_attr: Any, *a: Any, **k: Any) -> Any:
        tid = threading.get_ident()
        win = recorder.current(tid)
        if win is None or not isinstance(type_attr, property):
            return orig(vt, tx, name, type_attr, *a, **k)
        got = property_key(vt, str(name), type_attr)
        depth = recorder.traced.enter(tid, recorder.table.key_id(got[0])) if got is not None else None
        outer = win.prop_depth == 0
        win.prop_depth += 1
        t = time.perf_counter_ns()
        try:
            return orig(vt, tx, name, type_attr, *a, **k)
        finally:
            win.prop_depth -= 1
            if depth is not None:
                recorder.traced.exit(tid, depth)
            if got is not None:
                count_property(recorder, win, vt, got, (time.perf_counter_ns() - t) / 1e9, outer)

    UDO.resolve_data_descriptor = resolve_data_descriptor


def count_property(
    recorder: CompileRecorder, win: Window, vt: Any, got: tuple[FunctionKey, PropStat], seconds: float, outer: bool
) -> None:
    """One resolution of a property in ``win``: its count, its instances, its time (outermost only)."""
    (label, gfile, _gline, _kind), fresh = got
    stat = win.props.setdefault((label, gfile), fresh)
    stat.count += 1
    stat.instances.add(id(getattr(vt, "value", vt)))
    if outer:
        stat.seconds += seconds
