"""``dynaprof run --counterfactual``: a second run with every parametrization folded, its output
kept out of the user's terminal, its figures in the session and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import profile

SCRIPT = '''
import sys
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
for layer in (model[0], model[2]):
    nn.utils.parametrizations.weight_norm(layer)
backend = sys.argv[1]
with torch.no_grad():
    out = torch.compile(model, backend=backend)(torch.randn(2, 8))
print("parametrized:", torch.nn.utils.parametrize.is_parametrized(model[0]), out.shape)
'''


@pytest.mark.torch
def test_the_second_run_folds_every_parametrization_and_stays_out_of_the_output(tmp_path: Path) -> None:
    script = tmp_path / "wn.py"
    script.write_text(SCRIPT)
    r = profile(tmp_path, [str(script), "aot_eager"], "--counterfactual")
    assert r.returncode == 0, r.stderr
    # the script's own output once, from the profiled run, which kept its parametrizations
    assert r.stdout.splitlines() == ["parametrized: True torch.Size([2, 8])"]
    session = json.loads((r.run_dir / "session.json").read_text())
    cf = session["counterfactual"]
    assert cf["folded"] == ["Linear.weight via _WeightNorm"] * 2
    assert cf["exit_status"] == 0 and cf["compile_s"] > 0 and cf["kernels"] == 0  # aot_eager builds none
    assert not (r.run_dir / "counterfactual").exists()  # its journal is not left behind
    summary = (r.run_dir / "summary.md").read_text()
    assert "with its 2 parametrizations folded" in summary


LATE = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.utils.parametrizations.weight_norm(nn.Linear(8, 8))

    @torch.compile(backend="aot_eager")  # decorated before any Block exists: it reaches none
    def forward(self, x):
        return self.lin(x).relu()


@torch.compile(backend="aot_eager")
def step(model, x):  # the module comes as an argument
    return model(x) * 2


with torch.no_grad():
    print(Block()(torch.randn(2, 8)).shape, step(nn.utils.parametrizations.weight_norm(nn.Linear(8, 4)),
                                                 torch.randn(2, 8)).shape)
'''


@pytest.mark.torch
def test_modules_the_compiled_code_reaches_only_when_called_are_folded_too(tmp_path: Path) -> None:
    """A ``@torch.compile`` method's ``self`` and a module passed to a compiled function do not exist
    (or are not reachable) when torch.compile wraps the code: they are folded at the call."""
    script = tmp_path / "late.py"
    script.write_text(LATE)
    r = profile(tmp_path, [str(script)], "--counterfactual")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["torch.Size([2, 8]) torch.Size([2, 4])"]
    cf = json.loads((r.run_dir / "session.json").read_text())["counterfactual"]
    assert cf is not None and cf["folded"] == ["Linear.weight via _WeightNorm"] * 2, cf


@pytest.mark.torch
def test_nothing_to_fold_is_said_and_the_run_is_kept(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(SCRIPT.replace("nn.utils.parametrizations.weight_norm(layer)", "pass"))
    r = profile(tmp_path, [str(script), "eager"], "--counterfactual")
    assert r.returncode == 0, r.stderr
    assert "found no parametrization to fold" in r.stderr
    assert json.loads((r.run_dir / "session.json").read_text())["counterfactual"] is None


def test_it_does_not_combine_with_repeat(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    r = profile(tmp_path, [str(script)], "--counterfactual", "--repeat", "2")
    assert r.returncode == 2 and "does not combine with --repeat" in r.stderr
    assert r.stderr.count("\n") == 1  # one line, no traceback
