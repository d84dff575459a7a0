"""A compiled DDP training step: torch's DDP optimizer compiles one subgraph per gradient bucket.

    torchrun --nproc-per-node 2 samples/ddp_step.py
    dynaprof run --nproc-per-node 2 samples/ddp_step.py --backend aot_eager
    python samples/ddp_step.py        # without torchrun: a one-rank job (the split is the same)

CPU, gloo. ``torch.compile(DDP(model, bucket_cap_mb=1))``: with ``torch._dynamo.config.optimize_ddp``
at its default (``True``, i.e. ``"ddp_optimizer"``) Dynamo splits the model's graph where DDP's
gradient buckets end (``torch/_dynamo/backends/distributed.py``: ``DDPOptimizer``) and the backend
compiles each piece on its own (``SubmodCompiler``), so the backward of each bucket can start its
all-reduce early. Each ``Linear(512, 512)`` holds 1 MiB of fp32 parameters, so with 1 MiB buckets
``--layers 4`` makes 4 buckets: 4 forward graphs, compiled inside the model's one frame compile,
and 4 lazy backward compiles at the first ``.backward()``.

``--wrap compile-ddp`` compiles the module first and wraps it after (``DDP(torch.compile(model))``),
which splits the same way. ``--sequential`` uses ``nn.Sequential`` for the model: its ``forward``
is torch's own code, which Dynamo does not compile as a frame of its own, so nothing of the
model is compiled and nothing is split (only DDP's own wrapper code, with graph breaks).
``--optimize-ddp`` sets the config (``no_optimization``: one graph, no split).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch._dynamo
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class MLP(torch.nn.Module):
    def __init__(self, layers: int, width: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="aot_eager")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--bucket-cap-mb", type=float, default=1.0,
                   help="DDP's bucket size; DDPOptimizer refuses one under its 1 MiB first bucket")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--wrap", choices=["ddp-compile", "compile-ddp"], default="ddp-compile")
    p.add_argument("--sequential", action="store_true", help="the model as nn.Sequential (not split: see above)")
    p.add_argument("--optimize-ddp", help="torch._dynamo.config.optimize_ddp (default: torch's)")
    args = p.parse_args(argv)

    if args.optimize_ddp is not None:
        torch._dynamo.config.optimize_ddp = {"true": True, "false": False}.get(args.optimize_ddp, args.optimize_ddp)
    if "RANK" in os.environ:  # under torchrun
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    rank = dist.get_rank()
    torch.manual_seed(0)
    if args.sequential:
        model: torch.nn.Module = torch.nn.Sequential(
            *(m for _ in range(args.layers) for m in (torch.nn.Linear(args.width, args.width), torch.nn.ReLU())))
    else:
        model = MLP(args.layers, args.width)
    if args.wrap == "ddp-compile":
        step = torch.compile(DDP(model, bucket_cap_mb=args.bucket_cap_mb), backend=args.backend)
    else:
        step = DDP(torch.compile(model, backend=args.backend), bucket_cap_mb=args.bucket_cap_mb)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(8, args.width)
    for i in range(args.steps):
        t0 = time.perf_counter()
        loss = step(x).sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad()
        if rank == 0:
            print(f"step {i}: forward {t1 - t0:.3f} s, backward {t2 - t1:.3f} s "
                  f"(optimize_ddp={torch._dynamo.config.optimize_ddp!r}, world {dist.get_world_size()})")
    # free DDP (its C++ reducer) while the process group is still registered: the reducer's
    # destructor otherwise drops the last reference to the gloo group, whose destructor joins a
    # worker thread that waits for the GIL the main thread holds (a hang at exit, 1 run in 2 here)
    del step, opt
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
