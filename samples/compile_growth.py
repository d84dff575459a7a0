"""Compile work of a known shape in N, for ``dynaprof sweep`` (tests and benchmarks/bench_sweep.py).

    --shape constant   one compile of a fixed 8-op function, called N times: no compile work grows
    --shape linear     one compile of N sequential ops: the graph, guards and tracing grow as N
    --shape quadratic  N compiles, the k-th retracing a prefix of k ops (a static step count, so each
                       new k recompiles the whole prefix): N(N+1)/2 ops traced, as N^2

    dynaprof sweep --param N=4,8,16,32 samples/compile_growth.py --shape linear --n {N}
"""

from __future__ import annotations

import argparse

import torch

OPS_PER_STEP = 3  # each step below is three FX nodes: sin, mul, add


def step(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * 1.01 + 0.5


def fixed(x: torch.Tensor) -> torch.Tensor:
    for _ in range(8):
        x = step(x)
    return x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=("constant", "linear", "quadratic"), required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--backend", default="eager")
    args = ap.parse_args()
    n = args.n
    x = torch.randn(16)
    if args.shape == "constant":
        f = torch.compile(fixed, backend=args.backend)
        for _ in range(n):
            x = f(x)
    elif args.shape == "linear":

        def chain(x: torch.Tensor) -> torch.Tensor:
            for _ in range(n):  # n is a constant of the closure: unrolled into one graph
                x = step(x)
            return x

        x = torch.compile(chain, backend=args.backend)(x)
    else:
        # every k is a new compile of the same frame: lift the limit that would stop recompiling it
        cfg = torch._dynamo.config
        for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(cfg, name):
                setattr(cfg, name, max(getattr(cfg, name), 4 * n))

        def prefix(x: torch.Tensor, k: int) -> torch.Tensor:
            for _ in range(k):
                x = step(x)
            return x

        f = torch.compile(prefix, backend=args.backend, dynamic=False)
        for k in range(1, n + 1):
            x = f(x, k)
    print(f"shape={args.shape} n={n} sum={float(x.sum()):.4f}")


if __name__ == "__main__":
    main()
