"""AOTInductor on CPU: export a tiny module and compile it ahead of time (torch._inductor.aoti_compile_and_package)."""

import sys

import torch


class M(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


ep = torch.export.export(M(), (torch.randn(2, 8),))
torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[1])
