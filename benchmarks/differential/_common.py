"""Shared bits of the real-library differential scripts: determinism and the facts they print."""

from __future__ import annotations

import os
import warnings

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # models are built from configs; nothing is downloaded
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")


#: the dimensions every tiny transformers model here shares (a config adds what is its own)
TINY = {"hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 64}
#: a tiny decoder's attention and positions besides
TINY_DECODER = {**TINY, "vocab_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                "max_position_embeddings": 64}


def seed() -> None:
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)


def fact(label: str, t: torch.Tensor) -> str:
    """A line of facts about a tensor that a perturbed program would change."""
    t = t.detach().float()
    total = round(t.sum().item(), 4) + 0.0  # + 0.0: no "-0.0000" for a sum that rounds to zero
    return f"{label}: shape={tuple(t.shape)} sum={total:.4f} absmax={t.abs().max().item():.4f}"


def state() -> str:
    return f"grad={torch.is_grad_enabled()} inference={torch.is_inference_mode_enabled()}"
