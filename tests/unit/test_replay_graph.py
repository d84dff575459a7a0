"""The Inductor replay's graphs: described without values in the profiled process, rebuilt with
their parametrizations folded in the replay's (``capture.replay_graph``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dynaprof.capture import replay_graph
from dynaprof.model.journal import RECORD_TYPES, ReplayGraph
from tests.helpers import requires_torch, typeddict_problems

pytestmark = pytest.mark.torch
#: why the replay has nothing to describe on torch 2.4 (the capture says so: a ``replay_skipped`` record)
WHOLE_MODULES_24 = ("torch 2.4's Dynamo puts each parametrized module in the graph whole (its forward one op): no "
                    "node is a parametrization's, so there is no graph to describe or fold")


def _graphs(model: Any, x: Any) -> list[tuple[Any, list[Any]]]:
    """What Dynamo hands a backend for ``model(x)``: (graph module, example inputs) each."""
    import torch

    got: list[tuple[Any, list[Any]]] = []

    def backend(gm: Any, inputs: list[Any]) -> Any:
        got.append((gm, inputs))
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=backend)(x)
    return got


def _model(norm: bool) -> Any:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            conv = nn.Conv1d(4, 4, 3, padding=1)
            self.conv = nn.utils.parametrizations.weight_norm(conv) if norm else conv

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.leaky_relu(self.conv(x), 0.1) + x

    return nn.Sequential(Block(), Block())


@requires_torch("2.5", WHOLE_MODULES_24)
def test_a_parametrized_graph_is_described_without_values_and_folded_to_the_plain_graph() -> None:
    import torch

    x = torch.randn(1, 4, 8)
    (gm, inputs), = _graphs(_model(True), x)
    assert replay_graph.has_parametrization(gm)
    rec = replay_graph.describe(gm, inputs, "0/0")
    assert typeddict_problems(rec, RECORD_TYPES["replay_graph"], "replay_graph") == []
    text = json.dumps(rec)  # JSON as the journal writes it
    back: ReplayGraph = json.loads(text)
    assert "example_value" not in text and str(float(inputs[0].detach().flatten()[0])) not in text  # no values
    nodes, folded = replay_graph.folded_records(back)
    assert folded == 2  # one weight per parametrized conv
    plain_gm, _ = _graphs(_model(False), x)[0]
    ops = sorted(str(n["target"]) for n in nodes if n["op"] == "call_function")
    plain_ops = sorted(replay_graph.target_name(n.target) for n in plain_gm.graph.nodes if n.op == "call_function")
    assert ops == plain_ops  # the weight norm's own nodes are gone; the user's stay
    made = [n for n in nodes if n["op"] == "placeholder" and "tensor" in n]
    assert sorted(tuple(n["tensor"]["shape"]) for n in made).count((4, 4, 3)) == 2
    folded_gm, values = replay_graph.rebuild(nodes, back["traces"])
    with torch.no_grad():
        out = folded_gm(*values)
    assert tuple(out[0].shape if isinstance(out, (tuple, list)) else out.shape) == (1, 4, 8)
    # provenance travels: the rebuilt nodes still name the user's line
    traces = [n.meta.get("stack_trace", "") for n in folded_gm.graph.nodes if n.op == "call_function"]
    assert any("test_replay_graph.py" in t for t in traces)


def test_a_plain_graph_has_no_parametrization_and_is_never_described() -> None:
    import torch

    (gm, _), = _graphs(_model(False), torch.randn(1, 4, 8))
    assert not replay_graph.has_parametrization(gm)


def test_what_cannot_be_rebuilt_says_why() -> None:
    with pytest.raises(replay_graph.Unreplayable, match="no importable name"):
        replay_graph.target_name(lambda x: x)
    with pytest.raises(replay_graph.Unreplayable, match="argument of type"):
        replay_graph._encode(object())
    assert replay_graph.resolve("torch.nn.functional.leaky_relu", imported_only=True) is not None
    assert replay_graph.resolve("no_such_module_here.f") is None


@requires_torch("2.5", WHOLE_MODULES_24)
def test_a_dynamic_graph_is_kept_at_the_run_s_sizes() -> None:
    import torch

    torch._dynamo.reset()
    got: list[tuple[Any, list[Any]]] = []

    def backend(gm: Any, inputs: list[Any]) -> Any:
        got.append((gm, inputs))
        return gm.forward

    with torch.no_grad():
        torch.compile(_model(True), backend=backend, dynamic=True)(torch.randn(1, 4, 8))
    (gm, inputs), = got
    assert any(type(v).__name__ == "SymInt" for v in inputs)  # sizes were symbolic in the run
    rec = json.loads(json.dumps(replay_graph.describe(gm, inputs, "0/0")))
    assert rec["dynamic"] is True
    assert 8 in [n.get("value") for n in rec["nodes"] if n["op"] == "placeholder"]  # the hint: the run's size
    nodes, folded = replay_graph.folded_records(rec)
    folded_gm, values = replay_graph.rebuild(nodes, rec["traces"])
    with torch.no_grad():
        out = folded_gm(*values)
    assert folded == 2 and tuple((out[0] if isinstance(out, (tuple, list)) else out).shape) == (1, 4, 8)


def test_a_graph_that_calls_a_parametrized_module_whole_is_told_apart() -> None:
    """Torch 2.4 puts a parametrized module in the graph whole (its ``forward`` one op): no node is a
    parametrization's, and the capture says the replay cannot split its kernels rather than nothing."""
    import torch
    from torch import nn

    class Half(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 0.5

    lin = nn.Linear(4, 4)
    nn.utils.parametrize.register_parametrization(lin, "weight", Half())
    whole = torch.fx.symbolic_trace(nn.Sequential(lin))  # a torch.nn class: one call_module node
    assert [n.op for n in whole.graph.nodes] == ["placeholder", "call_module", "output"]
    assert not replay_graph.has_parametrization(whole) and replay_graph.calls_parametrized_module(whole)
    plain = torch.fx.symbolic_trace(nn.Sequential(nn.Linear(4, 4)))
    assert not replay_graph.calls_parametrized_module(plain)
