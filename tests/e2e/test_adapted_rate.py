"""The default rate adapting on a machine whose timer signal is costly: the run samples at the
lowest adapted rate, and the session and every header say the rate adapted (a fixed ``--rate`` does
not adapt). The costly signal is a cached floor for this boot (``capture.signal_cost``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dynaprof.capture.signal_cost import MIN_ADAPTED_HZ, boot_id
from dynaprof.model import load_session
from tests.conftest import run_dynaprof

pytestmark = pytest.mark.torch

SCRIPT = """
import torch

def f(x):
    for _ in range(60):
        x = torch.sin(x) * 2 + 1
    return x

torch.compile(f, backend="eager")(torch.randn(8))
print("done")
"""


def _run(tmp_path: Path, *extra: str) -> Path:
    cache = tmp_path / "cache"
    (cache / "dynaprof").mkdir(parents=True, exist_ok=True)
    (cache / "dynaprof" / "signal-cost.json").write_text(json.dumps({"boot": boot_id(), "floor_s": 3e-4}))
    (tmp_path / "s.py").write_text(SCRIPT)
    out = tmp_path / ("fixed" if extra else "adapted")
    proc = run_dynaprof(["run", "-o", str(out), *extra, "s.py"], tmp_path, env={"XDG_CACHE_HOME": str(cache)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "done" in proc.stdout
    return out


def test_a_costly_signal_adapts_the_default_rate_and_the_outputs_say_so(tmp_path: Path) -> None:
    out = _run(tmp_path)
    s = load_session(out / "session.json")
    assert s.samples is not None and s.samples.requested_hz == 1000.0
    assert s.samples.adapted_hz and s.samples.adapted_hz[0] == MIN_ADAPTED_HZ
    said = f"adapted to {MIN_ADAPTED_HZ:,.0f} Hz from the requested 1,000 Hz"
    assert said in (out / "summary.md").read_text()
    assert said in (out / "flame-compiler.svg").read_text()
    assert any(w.startswith(f"sampled at {MIN_ADAPTED_HZ:,.0f}") for w in s.capture.warnings)


def test_a_fixed_rate_does_not_adapt(tmp_path: Path) -> None:
    s = load_session(_run(tmp_path, "--rate", "1000") / "session.json")
    assert s.samples is not None and s.samples.adapted_hz == []


@pytest.mark.parametrize("extra", [(), ("--rate", "1000")], ids=["adapted", "fixed rate"])
def test_the_run_says_what_sampling_cost_it(tmp_path: Path, extra: tuple[str, ...]) -> None:
    """Adapted or not, the session keeps the signal samples, their own measured time and the
    cached floor (a fixed rate reads it, never measures it), and the summary says the cost."""
    out = _run(tmp_path, *extra)
    s = load_session(out / "session.json")
    assert s.samples is not None and s.samples.signal_samples > 0
    assert s.samples.floor_s == 3e-4 and s.samples.own_s is not None and s.samples.own_s > 0
    assert s.samples.cost_s == s.samples.own_s + s.samples.signal_samples * 3e-4
    assert f"{s.samples.signal_samples:,} timer signals at 300 us each" in (out / "summary.md").read_text()
