"""``dynaprof.sweep()`` and the ``dynaprof_sweep`` fixture: a function that builds and compiles a
model of size N, swept in this process, with the fit and the growth bound of ``dynaprof sweep``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dynaprof
from dynaprof.model.store import load_session
from dynaprof.model.sweep import load_sweep


def _chain(n: float) -> None:
    import torch

    def f(x: torch.Tensor) -> torch.Tensor:
        for _ in range(int(n)):
            x = torch.sin(x) + 1
        return x

    torch.compile(f, backend="eager")(torch.randn(8))


@pytest.mark.torch
def test_the_api_sweeps_a_function(tmp_path: Path) -> None:
    def build(n: float) -> None:
        if n == 3:
            raise ValueError("no model of size 3")
        _chain(n)

    result = dynaprof.sweep(build, [2, 3, 4, 8], repeat=2, path=tmp_path / "s", name="DEPTH")
    assert load_sweep(tmp_path / "s") == result.sweep and (tmp_path / "s" / "growth.svg").exists()
    failed = [r for p in result.sweep.points for r in p.runs if not r.ok]
    assert [r.error for r in failed] == ["ValueError: no model of size 3"] * 2  # the sweep went on
    assert load_session(tmp_path / "s" / "DEPTH-8" / "2").frames  # each call a run folder
    nodes = result.growth.fit("fx_nodes")
    assert nodes is not None and nodes.exponent is not None and 0.7 < nodes.exponent <= 1.01
    assert result.verdict()[0].startswith("compile time grows as N^")
    result.assert_growth(fx_nodes=1.2)
    with pytest.raises(AssertionError, match="FX nodes grows as N\\^"):
        result.assert_growth(fx_nodes=0.5)


@pytest.mark.torch
def test_the_fixture_asserts_a_growth_bound(dynaprof_sweep: Callable[..., Any]) -> None:
    result = dynaprof_sweep(_chain, [2, 4], repeat=1)
    result.assert_growth(fx_nodes=2.0, guards=0.5)
    with pytest.raises(dynaprof.ProfileError, match="no fitted measure named 'nope'"):
        result.assert_growth(nope=1.0)
