"""torch's own parametrizations on a small model: weight_norm, spectral_norm or orthogonal.

    python benchmarks/causes/torch_parametrizations.py --kind weight_norm
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.nn.utils import parametrizations


def build(kind: str, layers: int) -> nn.Module:
    if kind == "weight_norm":
        convs = [parametrizations.weight_norm(nn.Conv1d(16, 16, 3, padding=1)) for _ in range(layers)]
        return nn.Sequential(*convs)
    make = parametrizations.spectral_norm if kind == "spectral_norm" else parametrizations.orthogonal
    return nn.Sequential(*[make(nn.Linear(32, 32)) for _ in range(layers)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=("weight_norm", "spectral_norm", "orthogonal"), default="weight_norm")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--backend", default="eager")
    ap.add_argument("--fold", action="store_true", help="remove the parametrizations before compiling")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = build(args.kind, args.layers).eval()
    x = torch.randn(2, 16, 8) if args.kind == "weight_norm" else torch.randn(2, 32)
    with torch.no_grad():
        if args.fold:
            for m in model.modules():
                if nn.utils.parametrize.is_parametrized(m):
                    nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=True)
        compiled = torch.compile(model, backend=args.backend)
        t = time.perf_counter()
        out = compiled(x)
    print(f"{args.kind} fold={args.fold}: {(time.perf_counter() - t) * 1000:.0f} ms, out {tuple(out.shape)}")


if __name__ == "__main__":
    main()
