"""``InstructionTranslatorBase.log_graph_break``: where each graph break happened (reason, file,
line: the place torch's own log names), once per break (torch marks an exception it logged).
Torch 2.4 has no ``log_graph_break``: there each break's reason and user stack are read where the
graph is compiled at the break (``OutputGraph.compile_subgraph``'s ``reason``)."""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private
from dynaprof.model.journal import GraphBreakSite
from dynaprof.model.torch_files import torch_file


def _site(reason: str, stack: Any) -> GraphBreakSite:
    """A break's site from its user stack (outermost first): the innermost frame, and where that
    is torch's own code, the nearest frame outside torch (``via``: the user code or library that
    reached it, as a finding names it)."""
    site: GraphBreakSite = {"reason": reason, "file": None, "line": None}
    if not stack:
        return site
    file = str(stack[-1].filename)
    site["file"], site["line"] = file, int(stack[-1].lineno)
    if torch_file(file):
        for fs in reversed(stack):
            if not torch_file(str(fs.filename)):
                site["via_file"], site["via_line"] = str(fs.filename), int(fs.lineno)
                break
    return site


def install_graph_breaks(recorder: CompileRecorder) -> None:
    ITB = _private("torch._dynamo.symbolic_convert").InstructionTranslatorBase
    if not hasattr(ITB, "log_graph_break"):
        _install_at_compile_subgraph(recorder)
        return
    config = _private("torch._dynamo.config")
    guards = _private("torch._guards")

    orig = ITB.log_graph_break

    def site(tx: Any, exc: Any) -> GraphBreakSite:
        """Where torch itself says the break is (its log's "Graph break in user code at"): the
        innermost frame of the break's user stack; the translator's own line with nested graph
        breaks on, or where there is no stack. With it, the nearest frame outside torch."""
        try:
            if not (getattr(config, "nested_graph_breaks", False) and getattr(tx, "parent", None) is not None):
                stack = getattr(exc, "real_stack", None)
                if stack is None:
                    stack = guards.TracingContext.extract_stack()
                if stack:
                    return _site("", stack)  # the caller sets the reason it was given
        except Exception:  # a moved internal: the translator's own line
            pass
        return {"reason": "", "file": getattr(getattr(tx, "f_code", None), "co_filename", None),
                "line": getattr(tx, "lineno", None)}  # fmt: skip

    @functools.wraps(orig)
    def log_graph_break(tx: Any, code_options: Any, reason: Any, exc: Any, *a: Any, **k: Any) -> Any:
        try:
            win = recorder.current(threading.get_ident())
            if win is not None and not getattr(exc, "logged", False):
                found = site(tx, exc)
                found["reason"] = str(reason)[:2000]
                win.graph_break_sites.append(found)
        except Exception:
            pass
        return orig(tx, code_options, reason, exc, *a, **k)

    ITB.log_graph_break = log_graph_break


def _install_at_compile_subgraph(recorder: CompileRecorder) -> None:
    """Torch 2.4: a graph break compiles the graph so far with a ``GraphCompileReason`` whose
    ``graph_break`` is set (the frame's return compiles with one that is not), carrying the break's
    message and user stack; its last entry is the innermost user frame, as ``log_graph_break``'s."""
    output_graph = _private("torch._dynamo.output_graph").OutputGraph
    orig = output_graph.compile_subgraph

    @functools.wraps(orig)
    def compile_subgraph(this: Any, tx: Any, *a: Any, **k: Any) -> Any:
        try:
            reason = k.get("reason", a[1] if len(a) > 1 else None)
            win = recorder.current(threading.get_ident())
            if win is not None and reason is not None and getattr(reason, "graph_break", False):
                stack = getattr(reason, "user_stack", None) or []
                win.graph_break_sites.append(_site(str(reason.reason)[:2000], stack))
        except Exception:
            pass
        return orig(this, tx, *a, **k)

    output_graph.compile_subgraph = compile_subgraph
