"""A ResNet without parametrization, from a small transformers config (no weights downloaded),
compiled with Inductor on CPU. (timm's resnet18 would be the natural pick, but timm imports
torchvision, whose PyPI build does not import on CPU torch.)

    python benchmarks/causes/resnet_model.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "differential"))
import _common  # sets the offline environment before transformers is imported
import torch
from transformers import ResNetConfig, ResNetForImageClassification


def main() -> None:
    _common.seed()
    config = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[2, 2, 2, 2],
                          layer_type="basic", num_labels=10)
    model = ResNetForImageClassification(config).eval()
    with torch.no_grad():
        out = torch.compile(model, backend="inductor")(torch.randn(1, 3, 64, 64)).logits
    print(_common.fact("logits", out))


if __name__ == "__main__":
    main()
