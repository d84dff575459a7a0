"""torchao: ``quantize_`` an MLP to int8 weights (tensor-subclass weights), ``unwrap_tensor_subclass``, compile.

The quantized model is compiled as is, then unwrapped (torchao registers parametrizations that
rebuild the subclass from plain tensors) and compiled again with ``aot_eager``; outputs are
compared with the eager quantized model.
"""

from __future__ import annotations

import _common
import torch
from torch import nn
from torchao.quantization import Int8WeightOnlyConfig, quantize_
from torchao.utils import unwrap_tensor_subclass


def main() -> None:
    _common.seed()
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32)).eval()
    x = torch.randn(4, 64)
    with torch.no_grad():
        ref = model(x)
        quantize_(model, Int8WeightOnlyConfig())
        print(f"weight type={type(model[0].weight).__name__}")
        eager = model(x)
        print(_common.fact("quantized eager", eager) + f" close to float={torch.allclose(eager, ref, atol=0.05)}")
        out = torch.compile(model, backend="eager")(x)
        print(_common.fact("quantized compiled", out) + f" same as eager={torch.equal(out, eager)}")
        unwrap_tensor_subclass(model)
        print(f"unwrapped: parametrized={nn.utils.parametrize.is_parametrized(model[0])}")
        torch._dynamo.reset()
        out = torch.compile(model, backend="aot_eager")(x)
        print(_common.fact("unwrapped compiled", out) + f" same as eager={torch.allclose(out, eager)}")
    print(f"end: {_common.state()}")


if __name__ == "__main__":
    main()
