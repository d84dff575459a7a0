"""A graph break inside an inlined helper: Dynamo restarts the analysis of `f` (0/0 -> 0/0_1)."""

import torch


def helper(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y.cos()


def f(x):
    return helper(x) + 1


torch.compile(f, backend="eager")(torch.randn(4))
