"""The scheduler's per-node work is the node's (``hooks.current_node.wrap_ir_node``)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, ClassVar

from dynaprof.capture.hooks.current_node import wrap_ir_node
from dynaprof.capture.stacks import TracedStacks


class _Recorder:
    def __init__(self) -> None:
        self.causes = TracedStacks()
        self.compiling = True

    def current(self, tid: int) -> object | None:
        return object() if self.compiling else None

    def _node_cause_id(self, node: Any) -> int:
        return {"w_param": 7, "relu": 9}[node.name]

    def _combined_cause_id(self, ids: list[int]) -> int:
        return 100 + sum(sorted(set(ids)))


class _Scheduler:
    seen: ClassVar[list[int]] = []

    def create_scheduler_node(self, node: Any) -> str:
        self.seen.append(RECORDER.causes.top(threading.get_ident()))
        return "snode"


RECORDER = _Recorder()


def test_a_scheduler_node_is_made_under_its_ir_nodes_origins_cause() -> None:
    wrap_ir_node(RECORDER, _Scheduler, "create_scheduler_node")  # type: ignore[arg-type]
    s, tid = _Scheduler(), threading.get_ident()
    before = RECORDER.causes.top(tid)
    fx = [SimpleNamespace(name="w_param"), SimpleNamespace(name="relu")]
    assert s.create_scheduler_node(SimpleNamespace(origins=fx[:1])) == "snode"
    s.create_scheduler_node(SimpleNamespace(origins=fx))  # a fused op: the combined cause
    s.create_scheduler_node(SimpleNamespace(origins=set()))  # no origins: nothing pushed
    RECORDER.compiling = False
    s.create_scheduler_node(SimpleNamespace(origins=fx))  # outside a compile: nothing pushed
    assert _Scheduler.seen == [107, 116, before, before]
    assert RECORDER.causes.top(tid) == before  # popped again
