"""``--torch-trace``: torch's own TORCH_TRACE handler, attached to write the log into a folder."""

from __future__ import annotations

import os

from dynaprof.capture.torch_private import _private


def install_trace_export(directory: str) -> None:
    """Also write a TORCH_TRACE-compatible log (what tlparse reads) into ``directory``.

    TORCH_TRACE is read only when torch is imported, so attach torch's own file handler now.
    Note: any trace handler makes torch build every structured payload (a few % of compile)."""
    tli = _private("torch._logging._internal")

    os.makedirs(directory, exist_ok=True)
    handler = tli.LazyTraceHandler(directory)
    handler.setFormatter(tli.TorchLogsFormatter(trace=True))
    tli.trace_log.handlers.insert(0, handler)
