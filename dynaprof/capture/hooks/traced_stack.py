"""``OutputGraph.push_tx`` and ``pop_tx``, which every translator's ``run`` calls as it starts and in
its ``finally``: the traced user stack for samples (ids pushed and popped on ``TracedStacks``:
samples never read frame locals), the attempt index (one root translator runs per attempt) and,
for the ``inlines`` step, the inlined calls per attempt (each translator above the root is one
inlined call that Dynamo traced; a restart throws the earlier attempts' away).

Hooked at the push and the pop rather than around ``run``: a wrapper around ``run`` leaves a frame
of dynaprof's on the stack for each inlining level, which moves where CPython 3.11's frame data
stack crosses its 16 KiB chunks and made a plain compile map and unmap chunks twice as often
(``docs/performance.md``, "the frame stack")."""

from __future__ import annotations

import functools
import threading
from typing import Any

from dynaprof.capture.recorder import CompileRecorder
from dynaprof.capture.torch_private import _private


def install_traced_stack(recorder: CompileRecorder) -> None:
    hook_translator_push_pop(recorder)


def hook_translator_push_pop(recorder: CompileRecorder) -> None:
    """Wrap ``push_tx``/``pop_tx`` once per process; ``recorder.count_inlines`` turns the count on."""
    if recorder.tx_hooked:
        return
    OG = _private("torch._dynamo.output_graph").OutputGraph
    orig_push, orig_pop = OG.push_tx, OG.pop_tx
    traced = recorder.traced  # the function table is read at each call: a new profile block replaces it
    windows = recorder.windows

    @functools.wraps(orig_push)
    def push_tx(output: Any, tx: Any) -> Any:
        got = orig_push(output, tx)
        tid = threading.get_ident()
        stack = windows.get(tid)  # recorder.current, without a call on this path (once per inlined call)
        code = getattr(tx, "f_code", None)
        if not stack or code is None:
            return got
        win = stack[-1]
        if traced.depth(tid) <= win.traced_base:  # the root translator: one per attempt
            win.root_runs += 1
            win.attempt = win.root_runs - 1
        elif recorder.count_inlines:
            win.inlines += 1
            win.inlines_by_attempt[win.attempt] = win.inlines_by_attempt.get(win.attempt, 0) + 1
        if win.prop_pending is not None and recorder.on_getter_push is not None:
            recorder.on_getter_push(win, tid, tx, code)  # below the getter's own entry
        traced.enter(tid, recorder.table.code_id(code, "traced"))
        return got

    @functools.wraps(orig_pop)
    def pop_tx(output: Any) -> Any:
        tx = orig_pop(output)
        tid = threading.get_ident()
        code = getattr(tx, "f_code", None)
        stack = windows.get(tid)
        if code is not None and stack:
            traced.exit_value(tid, recorder.table.code_id(code, "traced"))  # and what an exception left above it
            win = stack[-1]
            if win.prop_open and win.prop_open[-1][0] is tx and recorder.on_getter_pop is not None:
                recorder.on_getter_pop(win, tid, tx)  # the getter's own translator
        return tx

    OG.push_tx, OG.pop_tx = push_tx, pop_tx
    recorder.tx_hooked = True
