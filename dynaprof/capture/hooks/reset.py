"""``torch._dynamo.reset``: counts reset generations (compile ids restart at 0/0 after it, so the
keys of later compiles carry the generation: ``model.frame_keys``)."""

from __future__ import annotations

import functools
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_reset(recorder: CompileRecorder) -> None:
    dynamo = _private("torch._dynamo")

    orig = dynamo.reset

    @functools.wraps(orig)
    def reset(*a: Any, **k: Any) -> Any:
        recorder.flush_guards()
        out = orig(*a, **k)
        recorder.generation += 1  # in the keys and compile_start records of the compiles after it
        return out

    dynamo.reset = reset  # torch.compiler.reset() calls torch._dynamo.reset() by attribute: covered
