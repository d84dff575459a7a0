"""``torch._dynamo.reset()`` in a loop, with recompiles on shape and grad mode in between.

A counting backend records every graph it is given (node count, input shapes); each round resets
Dynamo and calls the function on two shapes and under ``no_grad``. The facts: the graphs compiled
per round, the results and the grad mode.
"""

from __future__ import annotations

import torch

graphs: list[str] = []


def backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
    shapes = [tuple(t.shape) for t in example_inputs if isinstance(t, torch.Tensor)]
    graphs.append(f"{len(gm.graph.nodes)} nodes {shapes}")
    return gm.forward


def f(x: torch.Tensor) -> torch.Tensor:
    return (x.sin() + x.cos() * 2).sum()


def main() -> None:
    for i in range(5):
        torch._dynamo.reset()
        graphs.clear()
        cf = torch.compile(f, backend=backend, dynamic=False)
        a = cf(torch.arange(4.0, requires_grad=True))
        b = cf(torch.arange(6.0))
        with torch.no_grad():
            c = cf(torch.arange(4.0, requires_grad=True))
        print(f"round {i}: {a.item():.5f} {b.item():.5f} {c.item():.5f}")
        print(f"  requires_grad={a.requires_grad},{c.requires_grad}")
        print(f"  graphs={graphs}")
    print(f"end: grad={torch.is_grad_enabled()}")


if __name__ == "__main__":
    main()
