"""Two transformers models compiled in one process: a tiny BERT, then a tiny GPT-2, then BERT again.

The second model's compiles run after the first model's; the first model is called again
afterwards (a cache hit, no recompile: the printed compile count says so).
"""

from __future__ import annotations

import _common  # first: sets the offline environment before transformers is imported
import torch
from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel

frames: list[str] = []


def counting_backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
    frames.append(f"{len(gm.graph.nodes)} nodes")
    return gm.forward


def main() -> None:
    _common.seed()
    bert = BertModel(
        BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    ).eval()
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=2, n_positions=64))
    ids = torch.randint(0, 64, (2, 10))
    cbert = torch.compile(bert, backend=counting_backend)
    cgpt2 = torch.compile(gpt2, backend="aot_eager")
    with torch.no_grad():
        print(_common.fact("bert", cbert(input_ids=ids).last_hidden_state) + f" {_common.state()}")
    first = len(frames)
    out = cgpt2(input_ids=ids, labels=ids)
    out.loss.backward()
    grad = gpt2.transformer.wte.weight.grad
    assert grad is not None
    print(f"gpt2: loss={out.loss.item():.4f} wte grad norm={grad.norm().item():.4f} {_common.state()}")
    with torch.no_grad():
        print(_common.fact("bert again", cbert(input_ids=ids).last_hidden_state) + f" {_common.state()}")
    print(f"bert graphs: first call {first}, after both models {len(frames)}")
    print(f"end: {_common.state()}")


if __name__ == "__main__":
    main()
