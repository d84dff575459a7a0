"""A counterfactual run (every parametrization folded) tells which fused kernels exist only because
of the parametrization: those go to it whole; kernels with a counterpart keep the size split."""

from __future__ import annotations

import pytest

from dynaprof.capture import node_causes
from dynaprof.capture.hooks.unparametrize import fold_parametrizations, reached_modules
from dynaprof.ingest.kernel_match import KernelUsers, PlainKernels, match, plain_kernels
from dynaprof.ingest.kernel_split import Extra, split_kernels
from dynaprof.ingest.kernel_waits import KernelWait
from dynaprof.model.journal import KERNEL_CAUSE
from dynaprof.model.session import CompiledFrame, FunctionRef, Stack
from tests.factories import kernel

L1 = ("forward (m.py:9)", "/m.py", 9)
L2 = ("forward (m.py:12)", "/m.py", 12)


def mine(cause: int, users: set[tuple[str, str, int]], param_nodes: int = 2, key: str = "0/0") -> KernelUsers:
    return KernelUsers(key, cause, param_nodes, param_nodes > 0 and bool(users), frozenset(users))


def extra(kernels: list[KernelUsers], theirs: PlainKernels) -> set[int]:
    return match(kernels, theirs)[0]


def plain(*kernels: set[tuple[str, str, int]], key: str = "0/0") -> PlainKernels:
    return PlainKernels({key: [frozenset(k) for k in kernels]}, ["Conv1d.weight via _WeightNorm"])


def test_a_fused_kernel_the_plain_run_also_built_keeps_its_split() -> None:
    assert extra([mine(1, {L1}), mine(2, {L2})], plain({L1}, {L2})) == set()


def test_fused_kernels_beyond_the_plain_runs_count_go_to_the_parametrization() -> None:
    # HiFi-GAN: the same leaky_relu line fused with a weight norm in 3 kernels, 2 without one
    ks = [mine(1, {L1}, 3), mine(2, {L1}, 1), mine(3, {L1}, 2)]
    assert extra(ks, plain({L1}, {L1})) == {1}  # the one furthest from plain is the extra


def test_kernels_split_differently_are_matched_by_shared_causes() -> None:
    # the plain run fused L1 and L2 in one kernel; this run built one for each: one counterpart
    assert len(extra([mine(1, {L1}), mine(2, {L2})], plain({L1, L2}))) == 1
    # the kernel of user code alone claims its counterpart first: the fused one is left over
    assert extra([mine(1, {L1}), mine(2, {L2}, 0)], plain({L1, L2})) == {1}
    # a kernel of user code alone without a counterpart stays the user's
    assert extra([mine(1, {L1}), mine(2, {L2}, 0)], plain({L1})) == set()


def test_a_frame_the_plain_run_did_not_compile_is_not_compared() -> None:
    assert extra([mine(1, {L1})], plain({L1}, key="1/0")) == set()
    assert plain_kernels([mine(1, {L1}, 0), mine(2, {L2}, 0, key="1/0")], []).count == 2


def test_an_extra_kernel_is_sampled_under_the_parametrization_whole() -> None:
    functions = [
        FunctionRef("Conv1d.weight via _WeightNorm, fused with forward (m.py:9)", "/m.py", 3,
                    node_causes.CAUSE_PARAMETRIZATION),
        FunctionRef(*L1, node_causes.CAUSE_USER),
        FunctionRef("k1", "0/0", 0, KERNEL_CAUSE),
        FunctionRef("k2", "0/0", 1, KERNEL_CAUSE),
    ]  # fmt: skip
    kernels = [kernel("0/0", 2, "k1", 4, 1, 0, 1, (1,)), kernel("0/0", 3, "k2", 4, 3, 0, 1, (1,))]
    stacks = [Stack("0/0", 0, 1, [], [], 10, 1.0, [], 2), Stack("0/0", 0, 1, [], [], 10, 1.0, [], 3)]
    waits: list[KernelWait] = []
    frames = {"0/0": CompiledFrame("0/0", "0/0", "0/0", 0, "f", "/m.py", 1, 1, "MainThread", 0.0, 2.0)}
    extra = Extra()
    out = split_kernels(stacks, kernels, waits, {2: 1.0, 3: 1.0}, functions, frames, plain({L1}), extra)
    by_cause: dict[int, float] = {}
    for st in out:
        by_cause[st.cause] = by_cause.get(st.cause, 0.0) + st.seconds
    # k2 (more weight-norm nodes) has no counterpart: its second is the parametrization's whole;
    # k1 keeps the size split, which with no line to fit is by node count (1 of 4)
    assert by_cause[0] == pytest.approx(1.0 + 0.25)
    assert by_cause[1] == pytest.approx(0.75)
    assert (extra.kernels, extra.seconds) == (1, 1.0)
    assert frames["0/0"].fused_kernels == 2


def test_folding_keeps_the_parametrized_values_as_plain_tensors() -> None:
    import torch
    from torch import nn
    from torch.nn.utils import parametrize

    class Half(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.half()

    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    nn.utils.parametrizations.weight_norm(model[0])
    parametrize.register_parametrization(model[1], "bias", Half(), unsafe=True)  # changes the dtype
    before = (model[0].weight.detach().clone(), model[1].bias.detach().clone())

    def step(x: torch.Tensor) -> torch.Tensor:
        return model(x)

    assert reached_modules(step) == [model] and reached_modules(model.forward) == [model]
    other = nn.Linear(2, 2)
    assert reached_modules(step, (other, 1), {"m": model}) == [other, model, model]  # a call's arguments too
    folded = fold_parametrizations(reached_modules(model))
    assert folded == ["Linear.weight via _WeightNorm", "Linear.bias via Half"]
    assert not parametrize.is_parametrized(model[0]) and not parametrize.is_parametrized(model[1])
    assert torch.equal(model[0].weight, before[0]) and model[1].bias.dtype == torch.float16
    assert torch.equal(model[1].bias, before[1]) and isinstance(model[1].bias, nn.Parameter)
    assert fold_parametrizations([model]) == []  # nothing left to fold
