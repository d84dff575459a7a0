"""Compile one function with Inductor twice around torch._dynamo.reset(): the second compile
loads its graph from the FX graph cache (TORCHINDUCTOR_CACHE_DIR should be an empty folder)."""

import torch


def f(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * 2 + 1


x = torch.randn(8)
torch.compile(f, backend="inductor")(x)
torch._dynamo.reset()
torch.compile(f, backend="inductor")(x)
