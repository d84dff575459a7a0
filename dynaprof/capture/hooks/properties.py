"""Exact time and count per traced ``@property`` (parametrizations inject one per parameter),
pushed on the traced stack while its getter is traced.

Torch 2.13: ``UserDefinedObjectVariable._is_c_defined_property(prop)``, which Dynamo asks first when
it resolves a property, opens a Python property (on the traced stack, pending on the window); the
next translator pushed (``hooks.traced_stack``'s ``push_tx``), if it runs that getter's code, keeps
it open, and its ``pop_tx`` closes it. Opened at the check, not the push: the inlining set-up in
between is the property's work (``docs/causes.md``, "Re-measured after the getter hooks"). Nothing
of dynaprof's stays on the stack while the getter is traced: a wrapper round the resolution
(``resolve_data_descriptor``, which older torch still gets) adds a frame per property level, which
moved the seed's frame-stack chunk boundaries and made its compiles map and unmap a 16 KiB chunk
1,150 more times each (``docs/performance.md``, "Counted in instructions"). A getter Dynamo does
not inline (a graph break in it, a C getter) is not counted there.
"""

from __future__ import annotations

import functools
import threading
import time
import types
from typing import Any, NamedTuple

from dynaprof.capture.hooks.traced_stack import hook_translator_push_pop
from dynaprof.capture.recorder import CompileRecorder, PropStat, Window
from dynaprof.capture.stacks import FunctionKey
from dynaprof.capture.torch_private import _private
from dynaprof.model.journal import Prop

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
    record = Prop(label=label, owner=owner, name=name, getter_file=gfile, getter_line=gline, parametrized=parametrized,
                  count=0, instances=0, seconds=0.0)
    return (label, gfile, gline, "property"), PropStat(record)


def install_properties(recorder: CompileRecorder) -> None:
    UDO = _private("torch._dynamo.variables.user_defined").UserDefinedObjectVariable
    recorder._rdd_code = UDO.resolve_data_descriptor.__code__  # the legacy walker reads its frames
    if getattr(UDO, "_is_c_defined_property", None) is None:
        _wrap_resolution(recorder, UDO)
    else:
        _time_getters(recorder, UDO)


class _Pending(NamedTuple):
    """A property opened at Dynamo's check, waiting for its getter's push."""

    vt: Any
    prop: property
    got: tuple[FunctionKey, PropStat]
    fid: int
    depth: int  # on the traced stack
    t0: int  # perf_counter_ns


def _time_getters(recorder: CompileRecorder, UDO: Any) -> None:
    """Open the property where Dynamo checks it, hand it to its getter's push, close it at the pop
    (torch 2.13)."""
    orig = UDO._is_c_defined_property
    hook_translator_push_pop(recorder)
    names: dict[tuple[type, int], tuple[Any, str]] = {}  # holds the property: its id stays its own
    traced = recorder.traced

    @functools.wraps(orig)
    def _is_c_defined_property(vt: Any, subobj: Any, *a: Any, **k: Any) -> Any:
        got = orig(vt, subobj, *a, **k)
        if not got and isinstance(subobj, property):  # a Python getter, which Dynamo inlines next
            tid = threading.get_ident()
            win = recorder.current(tid)
            if win is not None:
                if win.prop_pending is not None:  # never reached a getter (a graph break before it)
                    _drop(win, tid)
                key = property_key(vt, _name_of(names, vt, subobj), subobj)
                if key is not None:
                    # open from here: the source walk, the class lookup and the inlining set-up
                    # before the getter's push are the property's work too
                    fid = recorder.table.key_id(key[0])
                    win.prop_pending = _Pending(vt, subobj, key, fid, traced.enter(tid, fid), time.perf_counter_ns())
        return got

    def _drop(win: Window, tid: int) -> None:
        p: _Pending = win.prop_pending  # type: ignore[assignment]
        traced.exit_if(tid, p.depth, p.fid)
        win.prop_pending = None

    def on_push(win: Window, tid: int, tx: Any, code: Any) -> None:
        p: _Pending = win.prop_pending  # type: ignore[assignment]
        if getattr(p.prop.fget, "__code__", None) is not code:  # not its getter: not counted
            _drop(win, tid)
            return
        win.prop_pending = None  # for this push only
        win.prop_open.append((tx, p.depth, p.got, p.vt, p.t0))

    def on_pop(win: Window, tid: int, tx: Any) -> None:  # tx is the innermost open getter's
        _tx, depth, got, vt, t0 = win.prop_open.pop()
        traced.exit(tid, depth)
        count_property(recorder, win, vt, got, (time.perf_counter_ns() - t0) / 1e9, not win.prop_open)

    recorder.on_getter_push, recorder.on_getter_pop = on_push, on_pop
    UDO._is_c_defined_property = _is_c_defined_property


def _name_of(names: dict[tuple[type, int], tuple[Any, str]], vt: Any, prop: Any) -> str:
    """The attribute name ``prop`` has on the object's class (found once per class and property)."""
    cls = type(getattr(vt, "value", None))
    known = names.get((cls, id(prop)))
    if known is not None:
        return known[1]
    name = next((n for c in cls.__mro__ for n, v in vars(c).items() if v is prop), "?")
    names[cls, id(prop)] = (prop, name)
    return name


def _wrap_resolution(recorder: CompileRecorder, UDO: Any) -> None:
    """Torch without ``_is_c_defined_property``: time the whole resolution from a wrapper (a frame
    of dynaprof's per property level)."""
    orig = UDO.resolve_data_descriptor

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
    record = stat.record
    record["count"] += 1
    stat.instances.add(id(getattr(vt, "value", vt)))
    if outer:
        record["seconds"] += seconds
