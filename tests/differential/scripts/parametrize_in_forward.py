"""The peft ``target_parameters`` pattern: a parametrization registered and removed inside ``forward``.

peft's ``ParamWrapper`` enters a ``contextlib.contextmanager`` in its forward that calls
``nn.utils.parametrize.register_parametrization`` on the wrapped module, runs it under
``parametrize.cached()``, and removes the parametrization in ``finally``. Compiled here (Dynamo
graph-breaks around it and traces the parametrized forward). The facts: outputs, that the module
is plain again after each call (class name, no ``parametrizations``), and the grad mode.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn
from torch.nn.utils import parametrize


class Delta(nn.Module):
    def __init__(self, delta: torch.Tensor) -> None:
        super().__init__()
        self.delta = delta

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return w + self.delta


class Wrapper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.base = nn.Linear(4, 4)
        self.lora_a = nn.Parameter(torch.full((4, 1), 0.1))
        self.lora_b = nn.Parameter(torch.full((1, 4), 0.2))

    @contextlib.contextmanager
    def activate(self) -> Iterator[None]:
        parametrize.register_parametrization(self.base, "weight", Delta(self.lora_a @ self.lora_b))
        try:
            with parametrize.cached():
                yield
        finally:
            parametrize.remove_parametrizations(self.base, "weight", leave_parametrized=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with self.activate():
            return self.base(x)


def main() -> None:
    torch.manual_seed(0)
    model = Wrapper()
    eager = model(torch.ones(2, 4)).detach()
    compiled = torch.compile(model, backend="eager")
    for i in range(3):
        out = compiled(torch.ones(2, 4) * (i + 1))
        print(f"call {i}: sum={out.sum().item():.5f} requires_grad={out.requires_grad}")
        print(f"  base class={type(model.base).__name__} parametrized={parametrize.is_parametrized(model.base)}")
    with torch.no_grad():
        out = compiled(torch.ones(2, 4))
    print(f"no_grad call: matches eager={torch.allclose(out, eager)} requires_grad={out.requires_grad}")
    print(f"end: grad={torch.is_grad_enabled()}")


if __name__ == "__main__":
    main()
