"""A compile whose backend raises: compilation_metrics carries fail_type / fail_reason."""

import torch


def bad_backend(gm, example_inputs):
    raise RuntimeError("backend exploded")


def f(x):
    return x.sin() + 1


try:
    torch.compile(f, backend=bad_backend)(torch.randn(4))
except Exception as e:
    print("raised", type(e).__name__)
