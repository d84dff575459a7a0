"""Torch 2.4: each call of a parametrized module that Dynamo traces, on the traced stack for its
duration (a ``PARAMETRIZED_CALL`` entry named by the user's class: ``Linear``).

Torch 2.4 traces no parametrization ``@property`` (``hooks.properties`` has nothing to hook there).
``nn.utils.parametrize`` gives each parametrized module a class of its own whose ``__module__`` is
``torch.nn.utils.parametrize``, so ``NNModuleVariable.call_function`` leaves its fast path for
``torch.nn`` modules: Dynamo builds a translator for ``Module._call_impl`` and inlines it (rebuilding
its bytecode each time), then puts the module's ``forward`` in the graph as one call, deep-copying
the module into fake tensors to run it. A plain module of the same class is one ``call_module``
node. That work is the parametrization's; without this entry, samples name the user's code that
calls the module. Where the properties hook is installed (torch 2.5+, which traces the properties
themselves) this hook is left out: a wrapper there would add a frame to every module call Dynamo
traces, and the properties already name the cause."""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder, NotHooked
from dynaprof.capture.stacks import FunctionKey
from dynaprof.capture.torch_private import _private
from dynaprof.model.journal import PARAMETRIZED_CALL

PARAMETRIZE_MODULE = "torch.nn.utils.parametrize"
_PARAMETRIZED = "Parametrized"

#: said once a run, at the first parametrized call: 2.4 guards such a module as a module (its
#: class, ``forward`` not in its ``__dict__``), never through its ``parametrizations`` container,
#: which is what ``hooks.guard_causes`` reads
GUARDS_UNKNOWN = ("torch 2.4: the guards Dynamo builds for parametrized modules (their classes and __dict__s) "
                  "are not told apart: their build stays in guard building, not on the parametrization")


def call_key(cls: type) -> FunctionKey | None:
    """The traced-stack entry of a call of a module of class ``cls``, where ``cls`` is one that
    ``nn.utils.parametrize`` made (``ParametrizedLinear`` -> "Linear", in parametrize.py)."""
    if getattr(cls, "__module__", None) != PARAMETRIZE_MODULE:
        return None
    name = cls.__name__
    shown = name[len(_PARAMETRIZED) :] if name.startswith(_PARAMETRIZED) and len(name) > len(_PARAMETRIZED) else name
    file = str(getattr(sys.modules.get(PARAMETRIZE_MODULE), "__file__", "") or "torch/nn/utils/parametrize.py")
    return (shown, file, 0, PARAMETRIZED_CALL)


def install_parametrized_calls(recorder: CompileRecorder) -> None:
    if "properties" in recorder.hooks:
        raise NotHooked("properties")  # this torch traces the parametrizations' properties
    NNModuleVariable = _private("torch._dynamo.variables.nn_module").NNModuleVariable
    orig = NNModuleVariable.call_function
    traced = recorder.traced
    unsaid = [True]

    @functools.wraps(orig)
    def call_function(vt: Any, tx: Any, *a: Any, **k: Any) -> Any:
        key = call_key(getattr(vt, "module_type", None))  # type: ignore[arg-type]
        tid = threading.get_ident()
        if key is None or recorder.current(tid) is None:
            return orig(vt, tx, *a, **k)
        if unsaid[0]:
            unsaid[0] = False
            recorder.warn(GUARDS_UNKNOWN)
        fid = recorder.table.key_id(key)
        depth = traced.enter(tid, fid)
        try:
            return orig(vt, tx, *a, **k)
        finally:
            traced.exit_if(tid, depth, fid)

    NNModuleVariable.call_function = call_function
