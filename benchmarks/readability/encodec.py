"""A transformers EnCodec audio model from a small config: its convolutions carry torch's
parametrization-based weight_norm, one ``ParametrizedConv1d`` class per instance, and its forward
graph-breaks, so the code after the break is compiled once per convolution it meets.

    python benchmarks/readability/encodec.py [BACKEND] [--plain] [--fold]

``--plain``: no weight norm (``norm_type="time_group_norm"``); ``--fold``: weight norm folded into
the weights before compiling (``remove_parametrizations``), the remedy the verdict suggests."""

from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "differential"))
import _common  # sets the offline environment before transformers is imported
import torch
from torch.nn.utils import parametrize
from transformers import EncodecConfig, EncodecModel

warnings.filterwarnings("ignore")


def main() -> None:
    _common.seed()
    args = sys.argv[1:]
    config = EncodecConfig(
        target_bandwidths=[24.0], sampling_rate=8000, audio_channels=1, hidden_size=16, num_filters=4,
        num_residual_layers=1, upsampling_ratios=[4, 2], codebook_size=32, codebook_dim=16, num_lstm_layers=1,
        norm_type="time_group_norm" if "--plain" in args else "weight_norm",
    )
    model = EncodecModel(config).eval()
    if "--fold" in args:
        for m in model.modules():
            if parametrize.is_parametrized(m):
                for name in list(m.parametrizations):
                    parametrize.remove_parametrizations(m, name, leave_parametrized=True)
    backend = next((a for a in args if not a.startswith("-")), "eager")
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        out = compiled(torch.randn(1, 1, 800))
    print(_common.fact("audio", out.audio_values))


if __name__ == "__main__":
    main()
