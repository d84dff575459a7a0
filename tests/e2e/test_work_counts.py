"""The ops after AOT autograd, counted live on aot_eager: present, positive, the same on two runs, and
counting them changes nothing of the program (no compile of dynaprof's own frames, the same output)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dynaprof.model.store import load_session
from tests.conftest import ROOT, plain_python, profile

# a backward inside compiled code (Dynamo breaks the graph at .backward(): autograd then runs, and
# AOT autograd compiles the backward lazily, with Dynamo's frame callback set), a lazy backward from
# plain code, and an inference graph
_SCRIPT = textwrap.dedent(
    """
    import torch

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))

    @torch.compile(backend="aot_eager")
    def step(x):
        y = m(x).sum()
        y.backward()
        return y.detach()

    x = torch.randn(2, 8)
    print(float(step(x)))
    other = torch.compile(torch.nn.Linear(8, 3), backend="aot_eager")
    other(x).sum().backward()
    with torch.no_grad():
        print(float(torch.compile(m, backend="aot_eager")(x + 1).sum()))
    print([round(float(p.grad.sum()), 4) for p in m.parameters()])
    """
)


@pytest.mark.torch
def test_aot_ops_on_aot_eager_are_present_positive_and_the_same_on_two_runs(tmp_path: Path) -> None:
    plain = plain_python(tmp_path, "train.py", _SCRIPT)
    got = []
    for i in range(2):
        run = tmp_path / f"r{i}"
        run.mkdir()
        (run / "train.py").write_text(_SCRIPT)
        r = profile(run, ["train.py"], "--sampler", "none")
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stdout == plain.stdout  # the program's output, untouched
        s = load_session(r.run_dir)
        assert "aot_graphs" in s.capture.hooks
        assert not [f for f in s.frames if Path(f.filename).is_relative_to(ROOT / "dynaprof")], \
            [(f.key, f.name, f.filename) for f in s.frames]  # Dynamo never traced the counting wrappers
        got.append({f.key: (f.kind, f.aot_graph_ops, f.inductor_ir_nodes) for f in s.frames})
    assert got[0] == got[1], got
    counts = got[0]
    # step's forward (before the break) and its lazy backward, the rest of step after the break
    # (its detach), the Linear's forward and backward, the inference graph: each in its own window
    forwards = {k: v for k, v in counts.items() if v[0] == "forward" and v[1] is not None}
    backwards = {k: v for k, v in counts.items() if v[0] == "backward"}
    assert len(forwards) == 4 and len(backwards) == 2, counts
    assert all(ops is not None and ops > 0 and ir is None for _, ops, ir in [*forwards.values(), *backwards.values()])
