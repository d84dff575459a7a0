"""A function called with a new input size each time: recompiles, unless compiled dynamic.

    python benchmarks/causes/changing_sizes.py            # dynamic=False: one compile per size (up to the limit)
    python benchmarks/causes/changing_sizes.py --dynamic  # dynamic=True: one compile
"""

from __future__ import annotations

import argparse
import time

import torch


def step(x: torch.Tensor) -> torch.Tensor:
    for _ in range(20):
        x = torch.tanh(x) * 2 + 1
    return x.sum(dim=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dynamic", action="store_true")
    ap.add_argument("--sizes", type=int, default=12)
    ap.add_argument("--backend", default="eager")
    args = ap.parse_args()
    fn = torch.compile(step, backend=args.backend, dynamic=bool(args.dynamic))
    t = time.perf_counter()
    for n in range(args.sizes):
        fn(torch.randn(8 + n, 16))
    print(f"dynamic={args.dynamic}: {(time.perf_counter() - t) * 1000:.0f} ms for {args.sizes} sizes")


if __name__ == "__main__":
    main()
