"""Graph breaks and recompiles: a print() splits the frame, new dtypes and shapes recompile it.

    python samples/graph_breaks_recompiles.py
    dynaprof run samples/graph_breaks_recompiles.py
"""

from __future__ import annotations

import argparse

import torch


def step(x: torch.Tensor) -> torch.Tensor:
    y = torch.tanh(x) @ x.T
    print("graph break here")  # unsupported side effect: Dynamo splits the frame here
    return torch.relu(y).sum(dim=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="eager")
    args = ap.parse_args()
    fn = torch.compile(step, backend=args.backend, dynamic=False)
    fn(torch.randn(8, 8))  # first compile: 2 graphs around the break
    fn(torch.randn(8, 8, dtype=torch.float64))  # dtype changed: recompile
    fn(torch.randn(16, 16))  # shape changed: recompile again
    fn(torch.randn(8, 8))  # cached: no compile
    print("ok")


if __name__ == "__main__":
    main()
