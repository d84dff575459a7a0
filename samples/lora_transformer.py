"""A real-world shape: LoRA adapters injected with nn.utils.parametrize into a transformer block.

Fine-tuning libraries add low-rank adapters to frozen weights; one clean way is a
parametrization (weight -> weight + B @ A * scale), so `module.weight` is computed on access.
Dynamo then traces that injected @property (and the adapter's forward) for every adapted
weight, every time it compiles. Compare:

    dynaprof run -o runs/lora samples/lora_transformer.py --lora
    dynaprof run -o runs/base samples/lora_transformer.py --no-lora
    dynaprof compare runs/base runs/lora
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.nn.utils import parametrize


class LoRA(nn.Module):
    """weight -> weight + (B @ A) * alpha / rank, with B zero-initialised (an identity at start)."""

    def __init__(self, out_features: int, in_features: int, rank: int, alpha: float) -> None:
        super().__init__()
        self.A = nn.Parameter(torch.randn(rank, in_features) / rank)
        self.B = nn.Parameter(torch.zeros(out_features, rank))
        self.scale = alpha / rank

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight + (self.B @ self.A) * self.scale


class Block(nn.Module):
    """A pre-norm transformer block: self-attention and an MLP."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.norm1(x)
        q, k, v = (p(h).view(b, t, self.heads, d // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        attn = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.down(nn.functional.gelu(self.up(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.head = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def add_lora(model: nn.Module, rank: int, alpha: float) -> int:
    """Adapt every attention projection's weight; returns how many weights were adapted."""
    n = 0
    for block in model.modules():
        if isinstance(block, Block):
            for proj in (block.q, block.k, block.v, block.o):
                out_f, in_f = proj.weight.shape
                parametrize.register_parametrization(proj, "weight", LoRA(out_f, in_f, rank, alpha))
                n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lora", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--backend", default="eager")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda")
    args = ap.parse_args()
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    torch.manual_seed(0)
    model = Model(args.dim, args.heads, args.layers).to(device)
    adapted = add_lora(model, args.rank, alpha=16.0) if args.lora else 0
    x = torch.randn(2, 64, args.dim, device=device)
    compiled = torch.compile(model, backend=args.backend)
    t = time.perf_counter()
    with torch.no_grad():
        out = compiled(x)
    if device.type == "cuda":
        torch.cuda.synchronize()
    print(f"lora={args.lora} adapted={adapted} first call (compile) {1000 * (time.perf_counter() - t):.0f} ms, "
          f"output {tuple(out.shape)}")


if __name__ == "__main__":
    main()
