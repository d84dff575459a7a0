"""Guards on a parametrization's original tensors are built for it (``capture.hooks.guard_causes``)."""

from __future__ import annotations

import pytest

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


def test_a_cause_is_pushed_only_when_a_sampler_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a parametrization's guard is built its cause is on the thread's cause stack, for the
    samples; with no sampler (``--sampler none``, py-spy) nothing is pushed."""
    import threading
    import types

    import dynaprof.capture.hooks.guard_causes as hook
    from dynaprof.capture.recorder import CompileRecorder
    from dynaprof.capture.stacks import FunctionTable

    seen: list[tuple[int, ...]] = []

    class Guard:
        name = "L['self']._modules['layer']._modules['parametrizations']._modules['weight']"

        def create(self, builder: object) -> None:
            seen.append(rec.causes.get(threading.get_ident()))

    monkeypatch.setattr(hook, "_private", lambda _name: types.SimpleNamespace(Guard=Guard))
    rec = CompileRecorder([].append, 0, FunctionTable())
    hook.install_guard_causes(rec)
    rec.windows[threading.get_ident()] = [object()]  # type: ignore[list-item]  # a compile is open
    Guard().create(None)
    rec.causes_sampled = False
    Guard().create(None)
    assert len(seen[0]) == 1 and rec.table.info[seen[0][0]] == GUARDS
    assert seen[1] == ()
    assert rec.causes.get(threading.get_ident()) == ()  # popped again
