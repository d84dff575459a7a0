"""``utils.record_chromium_event_internal`` (2.5+): Dynamo's phase spans, cheaply (no payloads).
Each event goes to ``CompileRecorder._on_chromium``, which also opens and closes the windows of
compiles that are not Dynamo frames (``model.frame_keys.OWN_COMPILE_SPANS``)."""

from __future__ import annotations

import functools
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_phases(recorder: CompileRecorder) -> None:
    du = _private("torch._dynamo.utils")

    orig = du.record_chromium_event_internal

    @functools.wraps(orig)
    def record(event: Any, *a: Any, **k: Any) -> Any:
        try:
            recorder._on_chromium(event)
        except Exception:
            pass
        return orig(event, *a, **k)

    du.record_chromium_event_internal = record
