"""Dataclass <-> JSON conversion driven by type hints, with validation.

The session model is plain dataclasses; this module turns them into JSON-ready dicts and back.
Loading validates every field against its annotation and reports the JSON path of the first
mismatch, so a corrupt or hostile session.json gives one clear error instead of a crash deep
inside a renderer.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from functools import cache
from typing import Any, TypeVar, Union

T = TypeVar("T")


class DecodeError(ValueError):
    """A value does not match the model; ``path`` says where (e.g. ``frames[3].phases``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '<root>'}: {message}")
        self.path = path


_ATOMS = (str, int, bool, type(None))
_STR = frozenset({str})
_FLOAT = frozenset({float})


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


_FLAT_TYPES = (int, float, str, bool, type(None))


@cache
def _flat(cls: type) -> bool:
    """Whether every field of ``cls`` is a scalar or a list of ints (``Stack``: a big session has
    hundreds of thousands), so it can be encoded without recursing into each value."""
    for hint in _hints(cls).values():
        args, origin = typing.get_args(hint), typing.get_origin(hint)
        if hint in _FLAT_TYPES or (args and origin is not list and all(a in _FLAT_TYPES for a in args)):
            continue
        if typing.get_origin(hint) is list and args == (int,):
            continue
        return False
    return True


def _flat_value(v: Any) -> Any:
    if type(v) is list:
        return list(v) if set(map(type, v)) <= {int} else [to_json(x) for x in v]
    if type(v) is float and not math.isfinite(v):
        return None
    return v


def to_json(obj: Any) -> Any:
    """Convert a dataclass tree to JSON-ready builtins (dicts keep field order)."""
    if isinstance(obj, _ATOMS):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None  # JSON has no NaN/inf; unknown is the honest reading
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        if _flat(cls):
            return {name: _flat_value(getattr(obj, name)) for name in _field_names(cls)}
        return {name: to_json(getattr(obj, name)) for name in _field_names(cls)}
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if set(map(type, obj)) <= {int}:  # stacks: long lists of function indices
            return list(obj)
        return [to_json(v) for v in obj]
    return obj


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_json(cls: type[T], data: Any, path: str = "") -> T:
    """Build ``cls`` from JSON data, validating types; unknown keys are ignored.

    Valid data goes through decoders compiled once per type (a session holds hundreds of
    thousands of stacks); only when that fails is it decoded again, slowly, to say where."""
    try:
        return typing.cast(T, _compiled(cls)(data))  # type: ignore[arg-type]
    except _Bad:
        pass
    result = _decode(cls, data, path)  # raises DecodeError naming the path
    return typing.cast(T, result)


class _Bad(Exception):
    """Fast-path mismatch; the slow path finds and names it."""


Decoder = typing.Callable[[Any], Any]


@cache
def _compiled(tp: Any) -> Decoder:
    """The decoder of one annotation, built once per type (``cache``) from the pieces below."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return lambda v: v
    if origin is Union or origin is types.UnionType:
        return _union_decoder(tp)
    if origin is list:
        return _list_decoder(tp)
    if origin is dict:
        return _dict_decoder(tp)
    if dataclasses.is_dataclass(tp):
        return _dataclass_decoder(tp)  # type: ignore[arg-type]
    if tp is float:
        return _number
    if tp in (int, bool, str):

        def exact(v: Any) -> Any:
            if type(v) is not tp:
                raise _Bad
            return v

        return exact
    raise TypeError(f"unsupported annotation {tp!r}")  # a model bug, not bad input


def _union_decoder(tp: Any) -> Decoder:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    nullable = len(args) < len(typing.get_args(tp))
    decs = [_compiled(a) for a in args]

    def union(v: Any) -> Any:
        if v is None:
            if nullable:
                return None
            raise _Bad
        for d in decs:
            try:
                return d(v)
            except _Bad:
                continue
        raise _Bad

    return union


def _list_decoder(tp: Any) -> Decoder:
    (item,) = typing.get_args(tp)
    if item is int:

        def ints(v: Any) -> Any:
            if type(v) is not list or not set(map(type, v)) <= {int}:
                raise _Bad
            return list(v)

        return ints
    d_item = _compiled(item)

    def seq(v: Any) -> Any:
        if type(v) is not list:
            raise _Bad
        return [d_item(x) for x in v]

    return seq


def _dict_decoder(tp: Any) -> Decoder:
    key_tp, val_tp = typing.get_args(tp)
    d_key, d_val = _compiled(key_tp), _compiled(val_tp)
    if key_tp is str and val_tp is float:  # seconds per name: every frame has a few

        def str_floats(v: Any) -> Any:
            if type(v) is not dict or not set(map(type, v)) <= _STR:
                raise _Bad
            values = v.values()
            if set(map(type, values)) <= _FLOAT and all(map(math.isfinite, values)):
                return dict(v)  # the usual case, checked without a call per value
            return {k: d_val(x) for k, x in v.items()}

        return str_floats

    def mapping(v: Any) -> Any:
        if type(v) is not dict:
            raise _Bad
        return {d_key(k): d_val(x) for k, x in v.items()}

    return mapping


def _number(v: Any) -> Any:
    if type(v) is float:
        if not math.isfinite(v):
            raise _Bad
        return v
    if type(v) is int:
        try:
            return float(v)
        except OverflowError:
            raise _Bad from None
    raise _Bad

def _to_float(v: int) -> float:
    try:
        return float(v)
    except OverflowError:
        raise _Bad from None


def _check(tp: Any, ns: dict[str, Any]) -> list[str]:
    """Lines that check (and convert) ``x`` as ``tp``, inline for scalars and int lists: a big
    session's 100,000 stacks decode without a call per field."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        if inner in (str, int, bool, float) or (typing.get_origin(inner) is list and typing.get_args(inner) == (int,)):
            return ["if x is not None:", *("    " + line for line in _check(inner, ns))]
    if tp in (str, int, bool):
        return [f"if type(x) is not {tp.__name__}: raise _Bad"]
    if tp is float:
        return ["if type(x) is not float:", "    if type(x) is not int: raise _Bad", "    x = _to_float(x)",
                "elif not _isfinite(x): raise _Bad"]
    if typing.get_origin(tp) is list and args == (int,):
        return ["if type(x) is not list or not set(map(type, x)) <= _INT: raise _Bad", "x = list(x)"]
    name = f"_d{len(ns)}"
    ns[name] = _compiled(tp)
    return [f"x = {name}(x)"]


def _dataclass_decoder(tp: type) -> Decoder:
    """A decoder for dataclass ``tp``, written out as Python source and compiled once: the same
    checks as the generic decoders, without their calls (a session.json holds a few hundred
    thousand objects). The leading required fields are passed by position, the rest by keyword;
    a missing required key is the ``KeyError`` of reading it."""
    hints = _hints(tp)
    ns: dict[str, Any] = {"_Bad": _Bad, "_tp": tp, "_isfinite": math.isfinite, "_to_float": _to_float,
                          "_INT": frozenset({int})}
    lines = ["def decode(v):", "  try:", "    if type(v) is not dict: raise _Bad", "    kw = {}"]
    positional: list[str] = []
    for f in dataclasses.fields(tp):
        key = repr(f.name)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required:
            lines.append(f"    x = v[{key}]")
            pad = "    "
        else:
            lines += [f"    if {key} in v:", f"        x = v[{key}]"]
            pad = "        "
        lines += [pad + line for line in _check(hints[f.name], ns)]
        if required and not f.kw_only and not _kw_started(tp, f):
            positional.append(f"p{len(positional)}")
            lines.append(f"{pad}{positional[-1]} = x")
        else:
            lines.append(f"{pad}kw[{key}] = x")
    lines += [f"    return _tp({''.join(a + ', ' for a in positional)}**kw)", "  except KeyError:",
              "    raise _Bad from None"]
    exec(compile("\n".join(lines), f"<decoder of {tp.__qualname__}>", "exec"), ns)  # our own source, no input
    return typing.cast(Decoder, ns["decode"])


def _kw_started(tp: type, field: dataclasses.Field[Any]) -> bool:
    """Whether a field before ``field`` in ``tp`` is passed by keyword (has a default or is
    keyword-only): from there on every field is."""
    for f in dataclasses.fields(tp):
        if f is field:
            return False
        if f.kw_only or f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            return True
    return False


def _key_path(path: str, key: object) -> str:
    """``path.key``, or ``path['key']`` for a key that is not a plain name (a newline in a key must
    not break the one-line error)."""
    k = str(key)
    return f"{path}.{k}" if k.isprintable() and k and " " not in k and "'" not in k else f"{path}[{k!r}]"


def _decode(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin is Union or origin is types.UnionType:
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise DecodeError(path, "must not be null")
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _decode(arg, value, path)
            except DecodeError as e:
                errors.append(e)
        raise errors[0]
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise DecodeError(path, f"expected a list, got {_kind(value)}")
        if item is int and set(map(type, value)) <= {int}:  # fast path for stacks (bool is not int here)
            return list(value)
        return [_decode(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        key_tp, val_tp = typing.get_args(tp)
        if not isinstance(value, dict):
            raise DecodeError(path, f"expected an object, got {_kind(value)}")
        return {_decode(key_tp, k, path): _decode(val_tp, v, _key_path(path, k)) for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise DecodeError(path, f"expected an object, got {_kind(value)}")
        hints = _hints(tp)  # type: ignore[arg-type]
        kwargs = {}
        for f in dataclasses.fields(tp):
            sub = f"{path}.{f.name}" if path else f.name
            if f.name in value:
                kwargs[f.name] = _decode(hints[f.name], value[f.name], sub)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise DecodeError(sub, "missing")
        return tp(**kwargs)  # type: ignore[operator]
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DecodeError(path, f"expected a number, got {_kind(value)}")
        try:
            number = float(value)
        except OverflowError:
            raise DecodeError(path, "number out of range") from None
        if not math.isfinite(number):
            raise DecodeError(path, "number out of range")
        return number
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DecodeError(path, f"expected an integer, got {_kind(value)}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise DecodeError(path, f"expected true/false, got {_kind(value)}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise DecodeError(path, f"expected a string, got {_kind(value)}")
        return value
    raise TypeError(f"unsupported annotation {tp!r} at {path}")  # a model bug, not bad input


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
