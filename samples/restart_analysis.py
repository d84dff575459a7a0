"""A compile that restarts analysis: a graph break inside an inlined helper.

Dynamo first traces `forward` inlining `helper`; the graph break inside the helper cannot be
handled mid-inline, so Dynamo throws the attempt away and restarts analysis of the frame
(compile id `0/0` becomes `0/0_1`), this time compiling the partial graph before the break.

    python samples/restart_analysis.py
    dynaprof run samples/restart_analysis.py
"""

from __future__ import annotations

import argparse

import torch


def helper(x: torch.Tensor) -> torch.Tensor:
    x = x.sin() + 1
    torch._dynamo.graph_break()  # forces a restart of the enclosing frame's analysis
    return x.cos()


def forward(x: torch.Tensor, depth: int) -> torch.Tensor:
    for _ in range(depth):
        x = torch.relu(x) * 2
    return helper(x) + 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="eager")
    ap.add_argument("--depth", type=int, default=20, help="ops traced before the restart")
    args = ap.parse_args()
    fn = torch.compile(forward, backend=args.backend)
    out = fn(torch.randn(64, 64), args.depth)
    print(f"ok: {tuple(out.shape)}")


if __name__ == "__main__":
    main()
