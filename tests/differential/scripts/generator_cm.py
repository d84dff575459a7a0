"""Compiles inside generator-based context managers, and generators that yield inside grad regions.

``contextlib.contextmanager`` functions that switch grad mode and print on exit; a generator
whose steps each yield inside ``no_grad``/``enable_grad``/``inference_mode`` with a compile at each
step; a generator abandoned while suspended inside ``no_grad`` (its ``finally`` runs when it is
dropped). The order of the prints and the grad mode at each point are the facts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def grad_mode(enabled: bool, name: str) -> Iterator[None]:
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(enabled)
    print(f"  enter {name}: grad={torch.is_grad_enabled()}")
    try:
        yield
    finally:
        torch.set_grad_enabled(prev)
        print(f"  exit {name}: grad={torch.is_grad_enabled()}")


def steps() -> Iterator[str]:
    with torch.no_grad():
        yield "no_grad"
    with torch.enable_grad():
        yield "enable_grad"
    with torch.inference_mode():
        yield "inference_mode"


def abandoned() -> Iterator[int]:
    try:
        with torch.no_grad():
            yield 1
            yield 2
    finally:
        print(f"  abandoned generator closed: grad={torch.is_grad_enabled()}")


def f(x: torch.Tensor) -> tuple[torch.Tensor, bool]:
    return x.cos() + 1, torch.is_grad_enabled()


def main() -> None:
    torch._dynamo.reset()
    cf = torch.compile(f, backend="eager")
    x = torch.ones(3, requires_grad=True)
    print("context managers")
    with grad_mode(False, "off"):
        y, grad = cf(x)
        print(f"  compiled under off: grad={grad} requires_grad={y.requires_grad}")
        with grad_mode(True, "on"):
            y, grad = cf(x)
            print(f"  compiled under on: grad={grad} requires_grad={y.requires_grad}")
    print("generator steps")
    for label in steps():
        y, grad = cf(x)
        print(f"  step {label}: grad={grad} requires_grad={y.requires_grad} sum={y.sum().item():.5f}")
    print(f"  after steps: grad={torch.is_grad_enabled()}")
    print("abandoned generator")
    gen = abandoned()
    next(gen)
    y, grad = cf(x)
    print(f"  compiled while suspended in no_grad: grad={grad}")
    del gen
    print(f"  after del: grad={torch.is_grad_enabled()}")


if __name__ == "__main__":
    main()
