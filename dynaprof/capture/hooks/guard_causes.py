"""Guards on a parametrization's tensors are built for it: ``Guard.create`` pushes its cause.

After tracing, Dynamo builds one guard at a time (``CheckFunctionManager`` calls ``Guard.create``
for each). Nothing is being traced then, so without this a guard's build is whole-graph work. A
guard whose source passes through a module's ``parametrizations`` container (the original tensors
a parametrization keeps: ``...parametrizations.weight.original``, ``original0``, ...) exists only
because of the parametrization, and so do the guards on the container itself (its type, that no
other key is there): while one is built, the parametrization's cause ``guards on parametrized
modules`` is pushed. Other guards push nothing, and nothing is pushed when no sampler reads the
causes (``--sampler none``, py-spy): the per-guard work cost the parametrized seed's compile ~1% of
its instructions (``docs/performance.md``, "Counted in instructions"). The check is a regex search
of the guard's name (built on first access, then cached on its source).
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

from dynaprof.capture.node_causes import CAUSE_PARAMETRIZATION
from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.stacks import FunctionKey
from dynaprof.capture.torch_private import _private

GUARDS: FunctionKey = ("guards on parametrized modules", "", 0, CAUSE_PARAMETRIZATION)

#: a source through the container: ``...parametrizations.weight`` (older torch) or
#: ``..._modules['parametrizations']...`` (2.13); a regex, so the per-guard test is one C call
_THROUGH_CONTAINER = re.compile(r"\.parametrizations|\['parametrizations'\]")


def guard_cause(name: str) -> FunctionKey | None:
    """The parametrization cause of a guard on ``name`` (its source), or None."""
    return GUARDS if _THROUGH_CONTAINER.search(name) else None


def install_guard_causes(recorder: CompileRecorder) -> None:
    guard_type = _private("torch._guards").Guard
    orig = guard_type.create
    causes = recorder.causes
    windows = recorder.windows
    through_container = _THROUGH_CONTAINER.search
    get_ident = threading.get_ident
    #: (function table, GUARDS' id in it): a profile block brings its own table
    cause: list[Any] = [None, -1]

    # Called once per guard built (2,704 on the seed): no call of dynaprof's own on the way
    # through, and one for a parametrization's guard (its cause id, once per table)
    @functools.wraps(orig)
    def create(guard: Any, builder: Any, *a: Any, **k: Any) -> Any:
        tid = get_ident()
        if not recorder.causes_sampled or not windows.get(tid):
            return orig(guard, builder, *a, **k)
        try:
            name = guard.name
        except Exception:  # a source that cannot name itself: Dynamo will say so in orig
            return orig(guard, builder, *a, **k)
        if not isinstance(name, str) or through_container(name) is None:
            return orig(guard, builder, *a, **k)
        if cause[0] is not recorder.table:
            cause[0], cause[1] = recorder.table, recorder._cause_id(GUARDS)
        stack = causes.stack_of(tid)
        depth = len(stack)
        stack.append(cause[1])
        try:
            return orig(guard, builder, *a, **k)
        finally:
            del stack[depth:]

    guard_type.create = create
