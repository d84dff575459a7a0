"""Classic peft LoRA (on ``q_proj``/``v_proj`` Linear layers) on a tiny random Llama, compiled.

A forward and backward through ``aot_eager`` (a training step with an optimizer), then a
``no_grad`` and an ``inference_mode`` evaluation, and the adapter merged and unmerged.
"""

from __future__ import annotations

import _common  # first: sets the offline environment before transformers is imported
import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM


def main() -> None:
    _common.seed()
    config = LlamaConfig(**_common.TINY_DECODER)
    model = get_peft_model(LlamaForCausalLM(config), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.02)
    ids = torch.randint(0, config.vocab_size, (2, 10))
    compiled = torch.compile(model, backend="aot_eager")
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    for step in range(2):
        out = compiled(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"step {step}: loss={out.loss.item():.4f} {_common.state()}")
    with torch.no_grad():
        print(_common.fact("no_grad logits", compiled(input_ids=ids).logits) + f" {_common.state()}")
    with torch.inference_mode():
        print(_common.fact("inference logits", compiled(input_ids=ids).logits) + f" {_common.state()}")
    merged = model.merge_and_unload()
    with torch.no_grad():
        print(_common.fact("merged logits", torch.compile(merged, backend="eager")(input_ids=ids).logits))
    print(f"end: {_common.state()}")


if __name__ == "__main__":
    main()
