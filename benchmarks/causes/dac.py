"""transformers' DAC audio codec from a small config, with the weight norm its training applies
(``DacModel.apply_weight_norm``: torch's parametrization-based ``weight_norm`` on every convolution)
or without it, compiled on one clip.

    python benchmarks/causes/dac.py [--backend inductor] [--plain]

A library model no other benchmark here uses (issue: the parametrization's whole cost on Inductor).
``--plain``: the same model without weight norm, the pair's other side."""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "differential"))
import _common  # sets the offline environment before transformers is imported
import torch
from transformers import DacConfig, DacModel


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--plain", action="store_true")
    args = ap.parse_args()
    _common.seed()
    config = DacConfig(encoder_hidden_size=8, downsampling_ratios=[2, 4], decoder_hidden_size=32, n_codebooks=2,
                       codebook_size=64, codebook_dim=4, hidden_size=32, upsampling_ratios=[4, 2])
    model = DacModel(config).eval()
    if not args.plain:
        model.apply_weight_norm()
    compiled = torch.compile(model, backend=args.backend)
    with torch.no_grad():
        out = compiled(torch.randn(1, 1, 512))
    print(_common.fact("audio", out.audio_values))


if __name__ == "__main__":
    main()
