"""User code that really runs while Dynamo compiles drops objects whose finalizers have effects.

Two places where Python code executes (is not traced) during a compile: a custom backend, and a
function marked ``torch._dynamo.assume_constant_result``, which Dynamo calls at trace time. Each
runs a helper that keeps a ``__del__`` probe and a suspended generator that yields inside
``torch.no_grad()`` in its locals, works for a few milliseconds, and returns. Under plain Python
the helper's return finalizes both at once: the probe prints, the generator closes and grad mode
is back on before the next line. A profiler that keeps the helper's frame alive moves the
finalizer print later and leaves grad mode off for the rest of the compile, so a
``torch.is_grad_enabled()`` that Dynamo folds into the graph bakes in the wrong branch.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import torch


class Probe:
    def __init__(self, name: str) -> None:
        self.name = name

    def __del__(self) -> None:
        print(f"  finalized {self.name}, grad={torch.is_grad_enabled()}")


def no_grad_while_suspended() -> Iterator[int]:
    with torch.no_grad():
        yield 1


def work(seconds: float) -> int:
    """Busy Python work, long enough for a 1 kHz sampler to see this frame many times."""
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def helper(name: str) -> None:
    probe = Probe(name)  # noqa: F841  (the frame's locals are what is being tested)
    gen = no_grad_while_suspended()
    next(gen)
    work(0.03)


graphs = 0


def backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
    global graphs
    graphs += 1
    helper(f"backend-{graphs}")
    print(f"  backend {graphs}: after helper, grad={torch.is_grad_enabled()}")
    return gm.forward


@torch._dynamo.assume_constant_result
def scale() -> int:
    helper("constant")
    print(f"  constant: after helper, grad={torch.is_grad_enabled()}")
    return 3


def f(x: torch.Tensor) -> torch.Tensor:
    y = x * scale()
    if torch.is_grad_enabled():  # Dynamo folds this at trace time
        return y + 1
    return y - 1


def main() -> None:
    x = torch.arange(4.0)
    for i in range(2):
        torch._dynamo.reset()
        print(f"compile {i}")
        out = torch.compile(f, backend=backend, fullgraph=True)(x)
        print(f"  result={out.tolist()} grad after call={torch.is_grad_enabled()}")
    print(f"graphs={graphs}")


if __name__ == "__main__":
    main()
