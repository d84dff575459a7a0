"""The order of ``__del__`` and ``weakref.finalize`` prints around compiles.

Objects die by refcount at known points: dropped between compiles, in a frame that returns from a
``torch._dynamo.disable``d helper the compiled code calls, inside a forward hook, and in a
reference cycle collected by ``gc.collect()``. Under plain Python each print comes at one
definite place in the output.
"""

from __future__ import annotations

import gc
import weakref

import torch


class Probe:
    def __init__(self, name: str) -> None:
        self.name = name
        self.other: object = None

    def __del__(self) -> None:
        print(f"  del {self.name}")


@torch._dynamo.disable
def runtime_helper(x: torch.Tensor) -> torch.Tensor:
    p = Probe("in disabled helper")  # noqa: F841  (dies when this frame returns)
    return x * 2


def f(x: torch.Tensor) -> torch.Tensor:
    y = x + 1
    y = runtime_helper(y)  # a graph break: the helper runs for real
    return y - 1


class Lin(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)


@torch._dynamo.disable
def drop_probe(name: str) -> None:
    Probe(name)


def hook(module: torch.nn.Module, args: object, out: torch.Tensor) -> None:
    drop_probe("in forward hook")


def main() -> None:
    torch.manual_seed(0)
    x = torch.arange(3.0)
    a = Probe("a")
    token = Probe("token")
    weakref.finalize(token, print, "  finalize token")
    print("compile f")
    out = torch.compile(f, backend="eager")(x)
    print(f"  f={out.tolist()}")
    del a
    print("after del a")
    del token
    print("after del token")
    m = Lin()
    m.lin.register_forward_hook(hook)
    print("compile module with hook")
    out = torch.compile(m.lin, backend="eager")(x)
    print(f"  lin={[round(v, 4) for v in out.tolist()]}")
    c1, c2 = Probe("cycle-1"), Probe("cycle-2")
    c1.other, c2.other = c2, c1
    del c1, c2
    print("collecting")
    gc.collect()
    print("collected")


if __name__ == "__main__":
    main()
