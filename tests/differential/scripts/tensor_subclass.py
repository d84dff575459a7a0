"""A traceable tensor subclass as a weight, compiled, then unwrapped the way torchao does it.

``TwoTensor`` (torch's test subclass: two tensors, ops applied to both) holds a Linear's weight;
the module is compiled with the subclass, then unwrapped with a parametrization whose
``right_inverse`` flattens the subclass into plain tensors and whose ``forward`` rebuilds it
(torchao's ``unwrap_tensor_subclass``), and compiled again with ``aot_eager``. The facts: outputs,
the weight's type seen from outside, the parametrization's original tensors.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import parametrize
from torch.testing._internal.two_tensor import TwoTensor


class Unwrap(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return TwoTensor(a, b)

    def right_inverse(self, w: TwoTensor) -> tuple[torch.Tensor, torch.Tensor]:
        return w.a, w.b


def main() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(4, 3, bias=False)
    w = lin.weight.detach()
    lin.weight = nn.Parameter(TwoTensor(w.clone(), w * 2), requires_grad=False)
    x = torch.ones(2, 4)
    out = torch.compile(lin, backend="eager")(x)
    print(f"subclass weight: out type={type(out).__name__} a={out.a.sum().item():.5f} b={out.b.sum().item():.5f}")
    parametrize.register_parametrization(lin, "weight", Unwrap(), unsafe=True)
    plist = lin.parametrizations["weight"]  # type: ignore[index]
    originals = [type(getattr(plist, f"original{i}")).__name__ for i in range(2)]
    print(f"unwrapped: weight type={type(lin.weight).__name__} originals={originals}")
    torch._dynamo.reset()
    out = torch.compile(lin, backend="aot_eager")(x)
    print(f"after unwrap: out type={type(out).__name__} a={out.a.sum().item():.5f} b={out.b.sum().item():.5f}")
    print(f"end: grad={torch.is_grad_enabled()}")


if __name__ == "__main__":
    main()
