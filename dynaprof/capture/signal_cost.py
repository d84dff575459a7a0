"""What one timer signal costs a compile on this machine, and the sampling rate that fits its budget.

The builtin sampler interrupts the compiling thread with SIGALRM. Delivering the signal costs the
interrupted thread before any sample is taken: the kernel's share, in a VM the hypervisor's, and the
caches it evicts. That floor is a few microseconds on bare metal and 50-140 us a signal on the
2-vCPU VM dynaprof is developed on (docs/performance.md), where 1 kHz alone costs 5-15% of a
compile. A synthetic loop underestimates it 2-4x (a compile's working set is far larger), so it is
measured on a small Dynamo compile (eager backend), with and without a 1 kHz timer and an empty
handler, in a subprocess once per boot, and cached (``cache_file``).

The default rate then adapts (``Sampler``): at most the asked rate, at most what keeps
(floor + the sample's own measured time) x rate within ``SAMPLER_BUDGET`` of compile time.
``--rate`` fixes the rate.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: the sampler's share of compile time (the hooks' is 2%: 5% in all, issue 36)
SAMPLER_BUDGET = 0.03
#: an adapted rate is never below this (a 1 s compile keeps 100 samples)
MIN_ADAPTED_HZ = 100.0
#: the subprocess that measures must finish within this
MEASURE_TIMEOUT_S = 120.0


def adapted_rate(max_hz: float, cost_s: float) -> float:
    """The rate whose signals cost at most ``SAMPLER_BUDGET`` of the thread's time at ``cost_s``
    a sample (signal and sample), rounded down to 50 Hz; never above ``max_hz``, never below
    ``MIN_ADAPTED_HZ`` (unless ``max_hz`` is)."""
    if cost_s <= 0:
        return max_hz
    fits = SAMPLER_BUDGET / cost_s
    if fits >= max_hz:
        return max_hz
    return min(max_hz, max(MIN_ADAPTED_HZ, fits // 50 * 50))


def boot_id() -> str:
    """This boot of this machine: the floor is a property of the machine (and its VM's host) now."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return f"{platform.node()}-{round(time.time() - time.monotonic(), -2):.0f}"


def cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dynaprof" / "signal-cost.json"


def known_floor() -> float | None:
    """The floor measured on this boot (seconds a signal), or None."""
    try:
        got = json.loads(cache_file().read_text())
        if got.get("boot") == boot_id() and isinstance(got.get("floor_s"), (int, float)):
            return max(0.0, float(got["floor_s"]))
    except (OSError, ValueError, AttributeError):
        pass
    return None


def floor_s(say: Callable[[str], None]) -> float | None:
    """The floor of this boot: cached, or measured now in a subprocess (said; a few seconds) and
    cached. None where it cannot be measured (no SIGALRM, the subprocess failed)."""
    known = known_floor()
    if known is not None or not hasattr(signal, "setitimer"):
        return known
    import subprocess  # here, not at the top: the run's child imports this module before the script

    say("dynaprof: measuring what a timer signal costs a compile on this machine (once per boot, a few seconds)")
    try:
        proc = subprocess.run([sys.executable, "-m", "dynaprof.capture.signal_cost"], capture_output=True, text=True,
                              timeout=MEASURE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        floor = float(proc.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None
    try:
        path = cache_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"boot": boot_id(), "floor_s": floor, "python": sys.version.split()[0]}))
        os.replace(tmp, path)
    except OSError:
        pass  # measured again next run
    return floor


def measure(pairs: int = 6, layers: int = 8) -> float:
    """Seconds one 1 kHz SIGALRM with an empty Python handler adds to a small Dynamo compile:
    alternating compiles without and with the timer, CPU time of this thread, medians."""
    import statistics

    import torch

    from dynaprof.capture.torch_private import _private

    ticks = [0]

    def tick(signum: int, frame: object) -> None:
        ticks[0] += 1

    def compile_once() -> float:
        _private("torch._dynamo").reset()
        model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(layers)])
        compiled = torch.compile(model, backend="eager")
        x = torch.randn(2, 16)
        gc.collect()
        t = time.thread_time()
        compiled(x)
        return time.thread_time() - t

    compile_once()  # lazy imports
    off, on, counts = [], [], []
    for _ in range(pairs):
        off.append(compile_once())
        ticks[0] = 0
        signal.signal(signal.SIGALRM, tick)
        signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
        try:
            on.append(compile_once())
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
        counts.append(ticks[0])
    n = statistics.median(counts)
    return max(0.0, (statistics.median(on) - statistics.median(off)) / n) if n else 0.0


if __name__ == "__main__":
    print(f"{measure():.9f}")
