"""A print() inside the compiled function: a graph break and its restarts; ``--fixed`` moves it out.

    python benchmarks/causes/graph_break.py [--fixed]
"""

from __future__ import annotations

import argparse
import time

import torch


def step(x: torch.Tensor, report: bool) -> torch.Tensor:
    for _ in range(30):
        x = torch.relu(x) * 2 - 1
    if report:
        print("halfway")  # unsupported side effect: Dynamo breaks the graph here
    for _ in range(30):
        x = torch.tanh(x) + 1
    return x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixed", action="store_true", help="print outside the compiled function")
    ap.add_argument("--backend", default="eager")
    args = ap.parse_args()
    fn = torch.compile(step, backend=args.backend)
    t = time.perf_counter()
    out = fn(torch.randn(32, 32), not args.fixed)
    if args.fixed:
        print("halfway")
    print(f"fixed={args.fixed}: {(time.perf_counter() - t) * 1000:.0f} ms, out {tuple(out.shape)}")


if __name__ == "__main__":
    main()
