"""CPU instructions retired on the compiling thread during each compile, where the machine has a
hardware counter: an exact count beside the noisy seconds, as torch's own pr_time_benchmarks use.

``torch._C._instruction_counter`` opens a perf event on the calling thread. Where the machine has
no CPU performance-monitoring unit (most VMs, dynaprof's test machine among them) it prints an error
and returns -1, which would change what the profiled script writes; so it is used only where the
kernel lists such a unit, and probed once with stderr muted. Without one the hook is left out
(``NotHooked``): sessions then hold no count, and ``compare`` says once that they could not.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynaprof.capture.recorder import CompileRecorder, NotHooked
from dynaprof.capture.torch_private import _private

#: where Linux lists its perf event sources; a CPU unit has an instructions event
EVENT_SOURCES = Path("/sys/bus/event_source/devices")


def has_cpu_counter(root: Path = EVENT_SOURCES) -> bool:
    """Whether some event source offers retired instructions (x86 ``cpu``/``cpu_core``, Arm PMUs)."""
    try:
        return any((d / "events" / e).exists() for d in root.iterdir() for e in ("instructions", "inst_retired"))
    except OSError:
        return False


@contextlib.contextmanager
def _stderr_muted() -> Iterator[None]:
    """fd 2 to /dev/null for one call (the probe's C++ error message must not reach the script's stderr)."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def install_instruction_counter(recorder: CompileRecorder) -> None:
    """Give the recorder torch's counter where it works: each window then counts its own."""
    if not has_cpu_counter():
        raise NotHooked
    counter: Any = _private("torch._C")._instruction_counter
    with _stderr_muted():
        probe = counter.start()
        if probe >= 0:
            counter.end(probe)
    if probe < 0:
        raise NotHooked
    recorder.instructions = counter
