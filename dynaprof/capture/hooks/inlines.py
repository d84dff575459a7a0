"""Inlined calls per attempt, counted where the traced stack is kept (``hooks.traced_stack``): each
translator Dynamo starts above a compile's root translator is one inlined call it traced. A call
Dynamo refuses to inline before tracing it (a skipped function) is not counted."""

from __future__ import annotations

from dynaprof.capture.hooks.traced_stack import hook_translator_push_pop
from dynaprof.capture.recorder import CompileRecorder


def install_inlines(recorder: CompileRecorder) -> None:
    hook_translator_push_pop(recorder)
    recorder.count_inlines = True
