"""Two compiles of the same function with torch._dynamo.reset() between: both are compile id 0/0."""

import torch


def f(x):
    return x.sin() + 1


torch.compile(f, backend="eager")(torch.randn(4))
torch._dynamo.reset()
torch.compile(f, backend="eager")(torch.randn(4, 2))
