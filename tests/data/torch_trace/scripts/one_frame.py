"""One small compile: the base of the corrupt/truncated fixtures."""

import torch


def f(x):
    return torch.relu(x) * 2


torch.compile(f, backend="eager")(torch.randn(4))
