"""A graph break (frame split in two) and a recompile on a new dtype."""

import torch


def f(x):
    x = x + 1
    torch._dynamo.graph_break()
    return x * 2


cf = torch.compile(f, backend="eager")
cf(torch.randn(4))
cf(torch.randn(4, dtype=torch.float64))
