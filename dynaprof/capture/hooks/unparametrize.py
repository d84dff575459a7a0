"""The counterfactual run of ``dynaprof run --counterfactual``: every parametrization folded first.

That run answers what one run cannot: which Inductor kernels exist only because of a
parametrization (it can change how Inductor fuses the code around it), and what the compile costs
without it. Just before ``torch.compile`` wraps its target (``OptimizeContext.__call__``: what
``torch.compile(module)``, ``module.compile()`` and ``@torch.compile`` all reach), every module
the target reaches is folded as dynaprof's remedy says: ``remove_parametrizations(module, name,
leave_parametrized=True)``, the parametrized value kept as a plain tensor. The modules it reaches:
the target itself, the module of a bound method, and the modules in a function's closure and
globals. A compiled function is folded again at each call, before it runs: by then its globals hold
modules made after the decoration, and its arguments the modules it is given (``self`` of a
``@torch.compile`` method, ``step(model, x)``). A ``folded`` record names what was folded.
Installed only in that second run: it changes the program on purpose.
"""

from __future__ import annotations

import functools
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def reached_modules(target: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> list[Any]:
    """The ``nn.Module`` instances a compile target reaches (see the module docstring), and those
    among the arguments of a call to it."""
    from torch import nn

    if isinstance(target, nn.Module):
        return [target]
    owner = getattr(target, "__self__", None)
    if isinstance(owner, nn.Module):
        return [owner]
    found: list[Any] = [v for v in (*args, *(kwargs or {}).values()) if isinstance(v, nn.Module)]
    for cell in getattr(target, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, nn.Module):
            found.append(value)
    scope = getattr(target, "__globals__", None)
    if isinstance(scope, dict):
        found += [v for v in list(scope.values()) if isinstance(v, nn.Module)]
    return found


def fold_parametrizations(modules: list[Any]) -> list[str]:
    """Fold every parametrization under ``modules`` into a plain tensor; ``Owner.tensor via
    Parametrization`` for each one folded, in module order."""
    from torch.nn.utils import parametrize

    folded: list[str] = []
    seen: set[int] = set()
    for root in modules:
        for sub in root.modules():
            if id(sub) in seen or not parametrize.is_parametrized(sub):
                continue
            seen.add(id(sub))
            owner = type(sub).__name__.removeprefix("Parametrized") or type(sub).__name__
            for name in list(sub.parametrizations.keys()):
                kinds = ", ".join(type(p).__name__ for p in sub.parametrizations[name])
                _fold_one(sub, name)
                folded.append(f"{owner}.{name} via {kinds}")
    return folded


def _fold_one(module: Any, name: str) -> None:
    """Keep the parametrized value as a plain tensor. ``leave_parametrized=True`` refuses a value
    of another dtype or shape than the original (a cast to half, as in the seed sample): such a
    value becomes a new parameter of its own (a buffer stays a buffer)."""
    import torch
    from torch.nn.utils import parametrize

    try:
        parametrize.remove_parametrizations(module, name, leave_parametrized=True)
        return
    except (RuntimeError, ValueError):
        pass
    original = module.parametrizations[name].original
    with torch.no_grad():
        value = getattr(module, name).detach().clone()
    parametrize.remove_parametrizations(module, name, leave_parametrized=False)
    if isinstance(original, torch.nn.Parameter):
        module._parameters[name] = torch.nn.Parameter(value, requires_grad=original.requires_grad)
    else:
        module._buffers[name] = value


def install_unparametrize(recorder: CompileRecorder) -> None:
    """Wrap ``OptimizeContext.__call__`` to fold before torch.compile wraps its target."""
    ctx = _private("torch._dynamo.eval_frame").OptimizeContext
    orig = ctx.__call__

    from torch import nn

    def fold(target: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> None:
        try:
            folded = fold_parametrizations(reached_modules(target, args, kwargs))
        except Exception as e:  # the run goes on unfolded there; the report says so
            recorder.warn(f"--counterfactual: could not fold a parametrization ({type(e).__name__}: {e})")
            folded = []
        if folded:
            recorder.emit({"t": "folded", "tensors": folded})

    @functools.wraps(orig)
    def call(self: Any, fn: Any, *a: Any, **k: Any) -> Any:
        fold(fn)
        compiled = orig(self, fn, *a, **k)
        if isinstance(fn, nn.Module) or not callable(compiled) or isinstance(compiled, nn.Module):
            return compiled

        @functools.wraps(compiled)
        def folding_first(*args: Any, **kwargs: Any) -> Any:
            fold(fn, args, kwargs)  # nothing left to fold costs a scan of the globals
            return compiled(*args, **kwargs)

        return folding_first

    ctx.__call__ = call
