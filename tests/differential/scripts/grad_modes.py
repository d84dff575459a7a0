"""Compiles inside ``no_grad``, ``enable_grad``, ``inference_mode`` and ``set_grad_enabled`` regions.

Prints, for each region, the grad/inference mode Dynamo saw (returned from the compiled function),
whether the output requires grad, the mode once the region is left, and the gradient of a backward
through an ``aot_eager`` graph. A profiler that changed global state during a compile changes them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch


def f(x: torch.Tensor) -> tuple[torch.Tensor, bool, bool]:
    y = (x.sin() * 2).sum()
    return y, torch.is_grad_enabled(), torch.is_inference_mode_enabled()


def main() -> None:
    cf = torch.compile(f, backend="eager")
    x = torch.linspace(0, 1, 5, requires_grad=True)
    regions: list[tuple[str, Callable[[], contextlib.AbstractContextManager[object]]]] = [
        ("default", contextlib.nullcontext),
        ("no_grad", torch.no_grad),
        ("set_grad_enabled(False)", lambda: torch.set_grad_enabled(False)),
        ("inference_mode", torch.inference_mode),
    ]
    for name, region in regions:
        with region():
            y, grad, inference = cf(x)
        print(f"{name}: grad={grad} inference={inference} requires_grad={y.requires_grad} value={y.item():.5f}")
        print(f"  after: grad={torch.is_grad_enabled()} inference={torch.is_inference_mode_enabled()}")
    with torch.no_grad():
        with torch.enable_grad():
            y, grad, _ = cf(x)
        print(f"enable_grad inside no_grad: grad={grad} requires_grad={y.requires_grad}")
        print(f"  back in no_grad: grad={torch.is_grad_enabled()}")
    g = torch.compile(lambda t: (t * t).sum(), backend="aot_eager")
    x.grad = None
    g(x).backward()
    assert x.grad is not None
    print(f"aot_eager backward: grad={[round(v, 4) for v in x.grad.tolist()]}")
    print(f"end: grad={torch.is_grad_enabled()}")


if __name__ == "__main__":
    main()
