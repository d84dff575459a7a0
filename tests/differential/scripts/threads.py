"""Compiles on worker threads (sampled by dynaprof's sampler thread, not its signal timer).

Each worker compiles with a backend that drops a ``__del__`` probe in a helper frame and records
which thread finalized it and in what grad mode; one worker compiles under ``no_grad``. Results
are collected per thread and printed after ``join`` in a fixed order, so the output does not
depend on which thread Dynamo's compile lock lets in first.
"""

from __future__ import annotations

import threading
import time

import torch

events: dict[str, list[str]] = {}


class Probe:
    def __init__(self, owner: str) -> None:
        self.owner = owner

    def __del__(self) -> None:
        events[self.owner].append(f"probe finalized on {threading.current_thread().name}")


def helper(owner: str) -> None:
    probe = Probe(owner)  # noqa: F841  (dies when this frame returns)
    end = time.perf_counter() + 0.02  # busy work long enough to be sampled
    while time.perf_counter() < end:
        pass


def backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
    owner = threading.current_thread().name
    helper(owner)
    events[owner].append(f"backend done, grad={torch.is_grad_enabled()}")
    return gm.forward


def work(name: str, scale: float, no_grad: bool) -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return (x * scale).relu().sum()

    x = torch.linspace(-1, 1, 8, requires_grad=True)
    if no_grad:
        with torch.no_grad():
            out = torch.compile(f, backend=backend)(x)
    else:
        out = torch.compile(f, backend=backend)(x)
    events[name].append(f"result={out.item():.5f} requires_grad={out.requires_grad} grad={torch.is_grad_enabled()}")


def main() -> None:
    specs = [("worker-0", 1.0, False), ("worker-1", 2.0, True), ("worker-2", -3.0, False)]
    for name, _, _ in specs:
        events[name] = []
    threads = [threading.Thread(target=work, args=spec, name=spec[0]) for spec in specs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, _, _ in specs:
        print(name)
        for line in events[name]:
            print(f"  {line}")
    print(f"main grad={torch.is_grad_enabled()}")


if __name__ == "__main__":
    main()
