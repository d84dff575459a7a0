"""The garbage collector's time during a compile is its own phase and cause, measured, not left on
whatever code the next sample lands in. The script's backend runs a full collection over a large
heap (a real one: every object alive is walked) and times it; the session's ``garbage_collection``
phase must hold most of it, and the rest of the compile none of the collection's time."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynaprof.model import load_session
from dynaprof.model.session import CAUSE_COLLECTOR
from tests.conftest import run_dynaprof

pytestmark = pytest.mark.torch

SCRIPT = """
import gc, time
import torch

heap = [[i] for i in range(1_500_000)]  # alive for the whole run: a full collection walks it
spent = []

def backend(gm, example_inputs):
    t = time.perf_counter()
    gc.collect()
    spent.append(time.perf_counter() - t)
    return gm.forward

def f(x):
    for _ in range(20):
        x = torch.sin(x) + 1
    return x

torch.compile(f, backend=backend)(torch.randn(8))
print(f"collected in {sum(spent):.6f}")
"""


def test_a_collection_during_a_compile_is_the_collectors(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text(SCRIPT)
    out = tmp_path / "run"
    proc = run_dynaprof(["run", "-o", str(out), "--rate", "1000", "s.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    measured = float(proc.stdout.split("collected in ")[1].split()[0])
    s = load_session(out / "session.json")
    assert s.axes is not None
    gc_row = s.axes.matrix.get("garbage_collection", {})
    assert set(gc_row) == {CAUSE_COLLECTOR}, s.axes.matrix
    assert gc_row[CAUSE_COLLECTOR] >= 0.5 * measured, (gc_row, measured)
    assert s.axes.causes[CAUSE_COLLECTOR] == gc_row[CAUSE_COLLECTOR]  # the cause axis says the same
