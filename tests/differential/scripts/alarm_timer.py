"""The script's own ``signal.alarm``/``setitimer`` around compiles.

dynaprof samples the main thread with ``ITIMER_REAL``/SIGALRM only when the script has neither a
SIGALRM handler nor an alarm, and must leave both as it found them. The facts: SIGALRM's
disposition and the real timer after a compile with none set; a handler and a pending
``alarm()`` surviving a compile (the handler still installed, the alarm still pending, not yet
fired); an interval timer firing into the script's handler after a compile (``signal.pause``
returns once it fired).
"""

from __future__ import annotations

import signal
from types import FrameType

import torch

fired: list[str] = []


def on_alarm(signum: int, frame: FrameType | None) -> None:
    fired.append(signal.Signals(signum).name)


def f(x: torch.Tensor) -> torch.Tensor:
    return x.exp().sum()


def main() -> None:
    x = torch.arange(3.0)
    out = torch.compile(f, backend="eager")(x)
    print(f"no alarm: result={out.item():.5f}")
    print(f"  SIGALRM default={signal.getsignal(signal.SIGALRM) == signal.SIG_DFL}")
    print(f"  real timer idle={signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)}")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(60)
    torch._dynamo.reset()
    out = torch.compile(f, backend="eager")(x * 2)
    remaining = signal.alarm(0)
    print(f"alarm(60) pending: result={out.item():.5f}")
    print(f"  handler kept={signal.getsignal(signal.SIGALRM) is on_alarm} still pending={0 < remaining <= 60}")
    print(f"  fired={fired}")

    signal.setitimer(signal.ITIMER_REAL, 30.0)
    torch._dynamo.reset()
    out = torch.compile(f, backend="eager")(x * 3)
    left, _ = signal.getitimer(signal.ITIMER_REAL)
    print(f"setitimer(30) pending: result={out.item():.5f} still pending={0 < left <= 30}")
    signal.setitimer(signal.ITIMER_REAL, 0.01)
    while not fired:
        signal.pause()
    print(f"  after pause: fired={fired} handler kept={signal.getsignal(signal.SIGALRM) is on_alarm}")


if __name__ == "__main__":
    main()
