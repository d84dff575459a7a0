"""Guards on a parametrization's original tensors are built for it (``capture.hooks.guard_causes``)."""

from __future__ import annotations

from dynaprof.capture.hooks.guard_causes import GUARDS, guard_cause
from dynaprof.capture.node_causes import CAUSE_PARAMETRIZATION


def test_a_guard_through_a_parametrizations_container_is_the_parametrizations() -> None:
    # torch 2.13 names module attributes through _modules[...]; older torch by attribute
    name = "L['self']._modules['0']._modules['parametrizations']._modules['weight']._parameters['original']"
    assert guard_cause(name) == GUARDS == ("guards on parametrized modules", "", 0, CAUSE_PARAMETRIZATION)
    assert guard_cause("L['self'].layers[3].parametrizations.bias.original0") == GUARDS
    # the container itself: its type, no other key in it
    assert guard_cause("L['self']._modules['seq']._modules['0']._modules['parametrizations']") == GUARDS


def test_other_guards_are_nobodys_in_particular() -> None:
    assert guard_cause("L['self']._modules['0']._parameters['weight']") is None
    assert guard_cause("L['x']") is None
    assert guard_cause("G['my_parametrizations_helper']") is None
