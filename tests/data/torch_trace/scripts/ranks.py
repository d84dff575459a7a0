"""Two ranks (gloo, CPU) each compiling one function: one log per rank. Run under torchrun."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")


def f(x):
    return (x.sin() + dist.get_rank()).sum()


torch.compile(f, backend="eager")(torch.randn(4))
dist.destroy_process_group()
