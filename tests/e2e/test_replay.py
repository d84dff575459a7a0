"""The Inductor replay end to end: a real Inductor run of a weight-norm model beside a plain one.
The kernels only the parametrization made are charged to it, the replay runs in a process of its
own and only for the graph with parametrizations, and the program's output is untouched."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dynaprof.analysis.findings import hottest
from dynaprof.model.store import load_session
from tests.conftest import plain_python, profile
from tests.helpers import requires_torch

_SCRIPT = textwrap.dedent(
    """
    import os, tempfile
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # cold: a cached graph defines no kernel
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, norm):
            super().__init__()
            conv = nn.Conv1d(16, 16, 3, padding=1)
            self.conv = nn.utils.parametrizations.weight_norm(conv) if norm else conv

        def forward(self, x):
            return torch.nn.functional.leaky_relu(self.conv(x), 0.1) + x

    torch.manual_seed(0)
    x = torch.randn(1, 16, 64)
    with torch.no_grad():
        normed = torch.compile(nn.Sequential(*[Block(True) for _ in range(8)]))(x)
        plain = torch.compile(nn.Sequential(Block(False), Block(False)))(x * 2)
    print(round(float(normed.sum()), 3), round(float(plain.sum()), 3))
    """
)


@pytest.mark.torch
@pytest.mark.inductor
@requires_torch("2.5", "torch 2.4's Dynamo puts each parametrized module in the graph whole (its forward one op): "
                "no node is a parametrization's, so nothing is replayed; the run says the kernels only the "
                "parametrization makes are unknown (an Inductor replay note)")
def test_the_replay_charges_kernels_only_the_parametrization_made_from_a_process_of_its_own(tmp_path: Path) -> None:
    plain = plain_python(tmp_path, "wn.py", _SCRIPT)
    r = profile(tmp_path, ["wn.py"], "--sampler", "builtin", timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout == plain.stdout  # the program's output, untouched
    s = load_session(r.run_dir)
    assert len(s.frames) == 2 and s.replay is not None, s.capture.warnings
    # one graph had parametrizations: one replayed, none failed, the plain model's never kept
    assert (s.replay.graphs, s.replay.failed) == (1, [])
    # never in the profiled process
    assert s.replay.pid is not None and s.run.pid is not None and s.replay.pid != s.run.pid
    # the weight norm makes Inductor build kernels the folded graph has no counterpart of (here: its
    # norms fused into one kernel with user code, which the folded graph does not build)
    assert s.replay.extra_kernels >= 1 and s.replay.extra_kernel_s > 0
    assert s.axes is not None and s.axes.causes.get("parametrization", 0.0) >= s.replay.extra_kernel_s * 0.5
    assert "Inductor replay of 1 graph" in r.stderr and "mixed:" not in r.stderr
    assert not hottest(s).startswith("mixed:")
    assert not (r.run_dir / "replay-graphs.json").exists()  # the replay's files are gone
