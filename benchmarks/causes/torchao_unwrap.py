"""torchao ``quantize_`` (int8 weight-only), compiled with or without ``unwrap_tensor_subclass``.

``unwrap_tensor_subclass`` registers a parametrization per weight that rebuilds the tensor
subclass from plain tensors (meant for ``torch.export``); ``torch.compile`` handles the subclass
itself.

    python benchmarks/causes/torchao_unwrap.py --unwrap
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torchao.quantization import Int8WeightOnlyConfig, quantize_
from torchao.utils import unwrap_tensor_subclass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unwrap", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--backend", default="aot_eager")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(args.layers)]).eval()
    x = torch.randn(4, 64)
    with torch.no_grad():
        quantize_(model, Int8WeightOnlyConfig())
        if args.unwrap:
            unwrap_tensor_subclass(model)
        compiled = torch.compile(model, backend=args.backend)
        t = time.perf_counter()
        out = compiled(x)
    print(f"unwrap={args.unwrap}: {(time.perf_counter() - t) * 1000:.0f} ms, out {tuple(out.shape)}")


if __name__ == "__main__":
    main()
