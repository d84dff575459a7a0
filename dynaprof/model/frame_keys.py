"""How a compiled frame is keyed, and the torch spans that are compiles of their own.

One scheme for the live capture (``capture.recorder``), the journal's reader (``ingest.assemble``)
and the TORCH_TRACE import (``ingest.trace_to_session``), so a run and its own log key every
compile alike:

* a frame compile is keyed by its compile id (``0/0``); ``torch._dynamo.reset()`` restarts the
  ids, so an id that came round again gets ``#<generation>`` (``0/0#1``), and a key still taken
  gets ``~n`` (``0/0#1~2``);
* a lazy backward compile (AOT autograd, at the first ``.backward()``) is keyed by its forward's
  key and ``:bw`` (``0/0:bw``), ``:bw2``... when one forward has several (DDP buckets);
* compiled autograd's compile ids start with ``!`` (``!0`` its capture of the autograd graph,
  ``!0/0/0`` Dynamo's compiles of that graph).
"""

from __future__ import annotations

from collections.abc import Container

from dynaprof.model.journal import FrameKind

#: the phase span of a lazy backward compile, logged under its forward's compile id
BACKWARD_SPAN = "entire_backward_compile"
#: the phase span of compiled autograd's capture of the autograd graph (compile id ``!N``)
COMPILED_AUTOGRAD_SPAN = "compiled_autograd"
#: spans that are compiles of their own (not Dynamo frames): span name -> frame kind
OWN_COMPILE_SPANS: dict[str, FrameKind] = {BACKWARD_SPAN: "backward", COMPILED_AUTOGRAD_SPAN: "compiled_autograd"}

#: the first character of compiled autograd's compile ids
COMPILED_AUTOGRAD_PREFIX = "!"


def is_compiled_autograd(compile_id: str) -> bool:
    """Whether a compile id is compiled autograd's (``!N`` or ``!N/F/C``)."""
    return compile_id.startswith(COMPILED_AUTOGRAD_PREFIX)


def kind_of_id(compile_id: str) -> FrameKind:
    """The kind of a compile known only by its id: compiled autograd's, else a frame compile."""
    return "compiled_autograd" if is_compiled_autograd(compile_id) else "forward"


def frame_key(compile_id: str, generation: int, used: Container[str]) -> str:
    """The key of a compile: its id, or where that is taken (the id came round after a reset)
    ``<id>#<generation>``, then ``~2``, ``~3``... until it is free."""
    key = compile_id if compile_id not in used else f"{compile_id}#{generation}"
    return _free(key, used, "~", 2)


def backward_key(forward_key: str, used: Container[str]) -> str:
    """The key of a lazy backward compile of the frame keyed ``forward_key``: ``:bw``, then
    ``:bw2``, ``:bw3``... for the next ones."""
    key = f"{forward_key}:bw"
    return key if key not in used else _free(key, used, "", 2)


def reused_id(key: str) -> bool:
    """Whether a frame key says its compile id came round again after a reset (``#<generation>``)."""
    return "#" in key


def is_backward_key(key: str) -> bool:
    """Whether a frame key is a lazy backward compile's (``<forward key>:bw[N]``)."""
    return ":bw" in key


def compile_id_of(key: str) -> str:
    """The compile id a frame key starts with (its ``#<generation>``, ``~n`` and ``:bw`` dropped)."""
    return key.split("#")[0].split("~")[0].split(":bw")[0]


def _free(base: str, used: Container[str], sep: str, n: int) -> str:
    key = base
    while key in used:
        key = f"{base}{sep}{n}"
        n += 1
    return key
