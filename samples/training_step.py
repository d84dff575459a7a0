"""A training step of the seed model: forward, backward and optimizer step, compiled.

Most of a training step's compile time is not in Dynamo's frame compile: AOT autograd compiles
the backward graph lazily, at the first ``.backward()``. dynaprof shows it as its own compile
(``kind: backward``, key ``0/0:bw``), sampled and attributed like the forward one.

    python samples/training_step.py --parametrize --backend aot_eager
    dynaprof run samples/training_step.py --no-parametrize --backend inductor

``--parametrize`` wraps every weight and bias in the seed's half-precision parametrization
(``samples/parametrized_linear.py``); ``--no-parametrize`` converts the module with ``.half()``.
``--compile-optimizer`` also compiles ``optimizer.step`` (its own Dynamo frame).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parametrized_linear import Module, parametrize


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parametrize", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--backend", default="inductor")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--compile-optimizer", action="store_true")
    args = p.parse_args(argv)

    torch.manual_seed(0)
    model = Module(args.layers, args.width)
    if args.parametrize:
        parametrize(model)  # each parameter is read through a property that casts it to half
    else:
        model.half()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    step = torch.compile(opt.step, backend=args.backend) if args.compile_optimizer else opt.step
    compiled = torch.compile(model, backend=args.backend)
    x = torch.randn([4, args.width], dtype=torch.half)
    for i in range(args.steps):
        t0 = time.perf_counter()
        loss = compiled(x).float().sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        step()
        opt.zero_grad()
        t3 = time.perf_counter()
        print(f"step {i}: forward {t1 - t0:.3f} s, backward {t2 - t1:.3f} s, optimizer {t3 - t2:.3f} s")


if __name__ == "__main__":
    main()
