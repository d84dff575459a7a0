"""``InliningInstructionTranslator.inline_call``: inlined-call counts, per attempt (a restart
throws the earlier attempts' away)."""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_inlines(recorder: CompileRecorder) -> None:
    IIT = _private("torch._dynamo.symbolic_convert").InliningInstructionTranslator

    orig = IIT.inline_call.__func__

    def inline_call(cls: Any, *a: Any, **k: Any) -> Any:
        win = recorder.current(threading.get_ident())
        if win is not None:
            win.inlines += 1
            win.inlines_by_attempt[win.attempt] = win.inlines_by_attempt.get(win.attempt, 0) + 1
        return orig(cls, *a, **k)

    IIT.inline_call = classmethod(functools.wraps(orig)(inline_call))
