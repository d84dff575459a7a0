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


def to_json(obj: Any) -> Any:
    """Convert a dataclass tree to JSON-ready builtins (dicts keep field order)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None  # JSON has no NaN/inf; unknown is the honest reading
    return obj


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_json(cls: type[T], data: Any, path: str = "") -> T:
    """Build ``cls`` from JSON data, validating types; unknown keys are ignored."""
    return typing.cast(T, _decode(cls, data, path))


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
        return [_decode(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        key_tp, val_tp = typing.get_args(tp)
        if not isinstance(value, dict):
            raise DecodeError(path, f"expected an object, got {_kind(value)}")
        return {_decode(key_tp, k, path): _decode(val_tp, v, f"{path}.{k}") for k, v in value.items()}
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
        return float(value)
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
