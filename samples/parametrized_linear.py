"""The seed case: nn.utils.parametrize makes Dynamo trace an injected @property per parameter.

32 x Linear(128, 128) in a Sequential, compiled with torch.compile. With --parametrize every
weight and bias is wrapped by a parametrization that casts to half precision (as in the
original PyTorch issue); with --no-parametrize the module is simply converted with .half().

    python samples/parametrized_linear.py --parametrize --backend eager
    dynaprof run samples/parametrized_linear.py --parametrize
"""

from __future__ import annotations

import argparse
import gc
import time

import torch
from torch import nn


class Module(nn.Module):
    def __init__(self, layers: int, width: int) -> None:
        super().__init__()
        self.seq = nn.Sequential(*[nn.Linear(width, width, bias=True) for _ in range(layers)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.seq(x)


class Parametrization(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.half()

    def right_inverse(self, x: torch.Tensor) -> torch.Tensor:
        return x.float()


def parametrize(model: nn.Module) -> None:
    for mod in list(model.modules()):
        for name, p in list(mod._parameters.items()):
            if p is not None:
                nn.utils.parametrize.register_parametrization(mod, name, Parametrization(), unsafe=True)


def fold(model: nn.Module) -> None:
    """Replace each parametrized parameter by its current value (inference only: the original is
    no longer trained through the parametrization). ``remove_parametrizations(...,
    leave_parametrized=True)`` does this in place when the value keeps the original's dtype; this
    parametrization casts to half, so the value is set as a new parameter instead."""
    for mod in list(model.modules()):
        if nn.utils.parametrize.is_parametrized(mod):
            for name in list(mod.parametrizations.keys()):  # type: ignore[union-attr, operator]
                with torch.no_grad():
                    value = getattr(mod, name).detach().clone()
                nn.utils.parametrize.remove_parametrizations(mod, name, leave_parametrized=False)
                mod._parameters[name] = nn.Parameter(value, requires_grad=False)


def pick_device(choice: str) -> torch.device:
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(choice)


def compile_once(use_parametrize: bool, args: argparse.Namespace, device: torch.device) -> float:
    torch._dynamo.reset()
    m = Module(args.layers, args.width).to(device)
    if use_parametrize:
        parametrize(m)
        if args.fold:  # the remedy dynaprof suggests for inference: bake the parametrizations in
            fold(m)
    else:
        m.half()
    x = torch.randn([1, args.width], device=device, dtype=torch.half)
    m(x)  # eager warm-up, as in the seed repro
    if args.gc_freeze:  # the remedy for the collector's time: what is alive now is never walked again
        gc.freeze()
    m.compile(backend=args.backend)
    gc_timer = GcTimer()
    gc.callbacks.append(gc_timer)
    t, cpu = time.perf_counter(), time.thread_time()
    try:
        m(x)  # first call compiles
        if device.type == "cuda":
            torch.cuda.synchronize()
    finally:
        gc.callbacks.remove(gc_timer)
    args.last_cpu_s = time.thread_time() - cpu  # this thread's CPU time: steadier than wall on a busy machine
    args.last_gc_s = gc_timer.seconds
    return time.perf_counter() - t


class GcTimer:
    """The time the garbage collector took during the compile. A full collection (~0.15 s here)
    lands in whichever compile crosses its allocation threshold, so it moves between runs when
    anything else in the process allocates: timing it apart shows when a difference is only that."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parametrize", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--both", action="store_true", help="compile parametrized then plain, in one process")
    ap.add_argument("--backend", default="eager", help="torch.compile backend (eager, aot_eager, inductor)")
    ap.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=1, help="compile this many times (with reset between)")
    ap.add_argument("--fold", action="store_true",
                    help="with --parametrize: remove_parametrizations(leave_parametrized=True) before compiling")
    ap.add_argument("--gc-freeze", action="store_true",
                    help="gc.freeze() before compiling: the garbage collector skips what is alive then")
    args = ap.parse_args()
    device = pick_device(args.device)
    modes = [True, False] if args.both else [args.parametrize]
    print(f"torch=={torch.__version__} device={device} backend={args.backend}")
    for _ in range(args.repeat):
        for mode in modes:
            dt = compile_once(mode, args, device)
            print(f"parametrize={mode}: {dt * 1000:.0f} ms (cpu {args.last_cpu_s * 1000:.0f} ms, "
                  f"gc {args.last_gc_s * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
