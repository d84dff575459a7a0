"""A transformers Wav2Vec2 from a tiny config (random weights), compiled: CTC forward, backward, eval."""

from __future__ import annotations

import _common  # first: sets the offline environment before transformers is imported
import torch
from transformers import Wav2Vec2Config, Wav2Vec2ForCTC


def main() -> None:
    _common.seed()
    config = Wav2Vec2Config(
        **_common.TINY,
        vocab_size=32,
        num_attention_heads=2,
        conv_dim=(16, 16, 16),
        conv_stride=(5, 2, 2),
        conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        mask_time_prob=0.0,
        layerdrop=0.0,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        feat_proj_dropout=0.0,
        final_dropout=0.0,
    )
    model = Wav2Vec2ForCTC(config)
    wave = torch.randn(2, 1600)
    labels = torch.randint(1, config.vocab_size, (2, 8))
    compiled = torch.compile(model, backend="eager")
    out = compiled(wave, labels=labels)
    print(_common.fact("logits", out.logits) + f" loss={out.loss.item():.4f}")
    out.loss.backward()
    grad = model.wav2vec2.feature_projection.projection.weight.grad
    assert grad is not None
    print(f"projection grad norm={grad.norm().item():.4f} {_common.state()}")
    model.eval()
    with torch.no_grad():
        print(_common.fact("eval logits", compiled(wave).logits) + f" {_common.state()}")
    print(f"end: {_common.state()}")


if __name__ == "__main__":
    main()
