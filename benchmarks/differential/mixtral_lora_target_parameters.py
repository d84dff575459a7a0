"""A tiny random Mixtral with a peft LoRA on its expert weights through ``target_parameters``.

peft wraps ``experts.gate_up_proj``/``experts.down_proj`` (3-D parameters, not Linear layers) in
``ParamWrapper``, whose forward registers an ``nn.utils.parametrize`` parametrization in a
generator-based context manager and removes it in ``finally``. Compiled forward (eager backend,
or the one named first on the command line), a training step through the compiled model, and a
``no_grad`` evaluation.
"""

from __future__ import annotations

import sys

import _common  # first: sets the offline environment before transformers is imported
import torch
from peft import LoraConfig, get_peft_model
from transformers import MixtralConfig, MixtralForCausalLM


def main() -> None:
    _common.seed()
    config = MixtralConfig(**{**_common.TINY_DECODER, "intermediate_size": 48}, num_local_experts=4,
                           num_experts_per_tok=2)
    model = MixtralForCausalLM(config)
    lora = LoraConfig(
        r=4, lora_alpha=8, target_modules=[], target_parameters=["experts.gate_up_proj", "experts.down_proj"]
    )
    model = get_peft_model(model, lora)
    for name, p in model.named_parameters():
        if "lora_B" in name:  # non-zero B, so the adapter changes the output
            torch.nn.init.normal_(p, std=0.02)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"trainable parameters={trainable}")
    ids = torch.randint(0, config.vocab_size, (2, 12))
    compiled = torch.compile(model, backend=sys.argv[1] if len(sys.argv) > 1 else "eager")
    out = compiled(input_ids=ids, labels=ids)
    print(_common.fact("logits", out.logits))
    print(f"loss={out.loss.item():.4f} requires_grad={out.loss.requires_grad} {_common.state()}")
    out.loss.backward()
    grads = [p.grad for n, p in model.named_parameters() if "lora" in n and p.grad is not None]
    print(f"lora grads={len(grads)} norm={torch.stack([g.norm() for g in grads]).sum().item():.4f}")
    with torch.no_grad():
        out = compiled(input_ids=ids)
    print(_common.fact("no_grad logits", out.logits) + f" {_common.state()}")
    print(f"end: {_common.state()}")


if __name__ == "__main__":
    main()
