"""A tiny random Mixtral with a peft LoRA on ``target_parameters``, compiled for inference, with or
without ``merge_and_unload()`` first (peft registers and removes a parametrization inside every
forward of the adapted experts; merging folds the adapter into the weights).

    python benchmarks/causes/peft_merge.py [--merge]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from peft import LoraConfig, get_peft_model
from transformers import MixtralConfig, MixtralForCausalLM


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--merge", action="store_true")
    ap.add_argument("--backend", default="eager")
    args = ap.parse_args()
    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                           num_experts_per_tok=2, max_position_embeddings=64)
    model = get_peft_model(MixtralForCausalLM(config), LoraConfig(
        r=4, lora_alpha=8, target_modules=[], target_parameters=["experts.gate_up_proj", "experts.down_proj"]))
    model.eval()
    if args.merge:
        model = model.merge_and_unload()
    ids = torch.randint(0, config.vocab_size, (2, 12))
    compiled = torch.compile(model, backend=args.backend)
    with torch.no_grad():
        t = time.perf_counter()
        out = compiled(input_ids=ids)
    print(f"merge={args.merge}: {(time.perf_counter() - t) * 1000:.0f} ms, logits {tuple(out.logits.shape)}")


if __name__ == "__main__":
    main()
