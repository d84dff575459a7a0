"""A transformers HiFi-GAN vocoder (SpeechT5HifiGan) from a small config, weight norm applied as
its training code does (torch's parametrization-based weight_norm), compiled on the eager backend.

    python benchmarks/readability/hifigan.py [BACKEND] [--plain]    # --plain: no weight norm"""

from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "differential"))
import _common  # sets the offline environment before transformers is imported
import torch
from transformers import SpeechT5HifiGan, SpeechT5HifiGanConfig

warnings.filterwarnings("ignore")


def main() -> None:
    _common.seed()
    config = SpeechT5HifiGanConfig(
        model_in_dim=16, upsample_initial_channel=32, upsample_rates=[4, 4], upsample_kernel_sizes=[8, 8],
        resblock_kernel_sizes=[3, 7], resblock_dilation_sizes=[[1, 3], [1, 3]], normalize_before=False,
    )
    model = SpeechT5HifiGan(config)
    args = sys.argv[1:]
    if "--plain" not in args:
        model.apply_weight_norm()
    backend = next((a for a in args if not a.startswith("-")), "eager")
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        wave = compiled(torch.randn(1, 10, 16))
    print(_common.fact("waveform", wave))


if __name__ == "__main__":
    main()
