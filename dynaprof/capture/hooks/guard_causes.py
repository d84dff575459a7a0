"""Guards on a parametrization's tensors are built for it: ``Guard.create`` pushes its cause.

After tracing, Dynamo builds one guard at a time (``CheckFunctionManager`` calls ``Guard.create``
for each). Nothing is being traced then, so without this a guard's build is whole-graph work. A
guard whose source passes through a module's ``parametrizations`` container (the original tensors
a parametrization keeps: ``...parametrizations.weight.original``, ``original0``, ...) exists only
because of the parametrization, and so do the guards on the container itself (its type, that no
other key is there): while one is built, the parametrization's cause ``guards on parametrized
modules`` is pushed. Other guards push nothing. The check is a substring test of the guard's name,
which Dynamo computes for its own use anyway.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture.node_causes import CAUSE_PARAMETRIZATION
from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.stacks import FunctionKey
from dynaprof.capture.torch_private import _private

GUARDS: FunctionKey = ("guards on parametrized modules", "", 0, CAUSE_PARAMETRIZATION)


def guard_cause(name: str) -> FunctionKey | None:
    """The parametrization cause of a guard on ``name`` (its source), or None. A source passes
    through the container as ``...parametrizations.weight`` (older torch) or
    ``..._modules['parametrizations']...`` (2.13)."""
    return GUARDS if ".parametrizations" in name or "['parametrizations']" in name else None


def install_guard_causes(recorder: CompileRecorder) -> None:
    guard_type = _private("torch._guards").Guard
    orig = guard_type.create
    causes = recorder.causes

    @functools.wraps(orig)
    def create(guard: Any, builder: Any, *a: Any, **k: Any) -> Any:
        tid = threading.get_ident()
        if recorder.current(tid) is None:
            return orig(guard, builder, *a, **k)
        try:
            name = guard.name
        except Exception:  # a source that cannot name itself: Dynamo will say so in orig
            return orig(guard, builder, *a, **k)
        key = guard_cause(name) if isinstance(name, str) else None
        if key is None:
            return orig(guard, builder, *a, **k)
        depth = causes.enter(tid, recorder._cause_id(key))  # one interned id: a dict lookup
        try:
            return orig(guard, builder, *a, **k)
        finally:
            causes.exit(tid, depth)

    guard_type.create = create
