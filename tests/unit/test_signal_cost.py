"""The sampling rate adapts to what a sample costs here (``capture.signal_cost``, ``capture.sampler``)."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest

from dynaprof.capture import signal_cost
from dynaprof.capture.sampler import ADAPT_EVERY, Sampler
from dynaprof.capture.signal_cost import MIN_ADAPTED_HZ, SAMPLER_BUDGET, adapted_rate
from dynaprof.capture.stacks import FunctionTable, Markers, StackWalker


def test_the_rate_keeps_the_sampler_within_its_budget() -> None:
    assert adapted_rate(1000.0, 10e-6) == 1000.0  # cheap signals: the asked rate
    got = adapted_rate(1000.0, 150e-6)
    assert got * 150e-6 <= SAMPLER_BUDGET and got % 50 == 0 and got >= MIN_ADAPTED_HZ
    assert adapted_rate(1000.0, 1.0) == MIN_ADAPTED_HZ  # never below the floor rate
    assert adapted_rate(50.0, 1.0) == 50.0  # nor above what was asked
    assert adapted_rate(1000.0, 0.0) == 1000.0


def test_the_floor_is_cached_per_boot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(signal_cost, "boot_id", lambda: "boot-a")
    assert signal_cost.known_floor() is None
    path = signal_cost.cache_file()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"boot": "boot-a", "floor_s": 7e-05}))
    assert signal_cost.known_floor() == 7e-05
    said: list[str] = []
    assert signal_cost.floor_s(said.append) == 7e-05 and said == []  # cached: nothing measured, nothing said
    monkeypatch.setattr(signal_cost, "boot_id", lambda: "boot-b")  # rebooted: the host may differ
    assert signal_cost.known_floor() is None
    path.write_text("not json")
    assert signal_cost.known_floor() is None


def _sampler(floor: float | None) -> Sampler:
    return Sampler(StackWalker(FunctionTable(), Markers()), 1000.0, lambda tid: ("0/0", 0), lambda items: None,
                   floor_s=floor)


def test_a_costly_signal_lowers_the_rate_and_says_why() -> None:
    s = _sampler(300e-6)  # 300 us a signal: 1 kHz would cost a third of the compile
    s._adapt()
    assert s.rate_hz == MIN_ADAPTED_HZ and s.interval == pytest.approx(1 / MIN_ADAPTED_HZ)
    s.samples = 5
    s.stop()
    (note,) = [n for n in s.notes if n.startswith("sampled at")]
    assert "not 1,000" in note and "300 us" in note and "--rate" in note


def test_a_fixed_rate_never_adapts() -> None:
    s = _sampler(None)  # --rate given
    assert not s._adapt() and s.rate_hz == 1000.0
    s.stop()
    assert not any(n.startswith("sampled at") for n in s.notes)


def test_the_handler_measures_its_own_cost_and_adapts_to_it() -> None:
    s = _sampler(0.0)
    assert s.main_tid is not None
    s._last_ns[s.main_tid] = 0
    real = s._record

    def slow(*a: object, **k: float) -> None:  # a sample costing 1 ms: over budget at any rate above 30 Hz
        real(*a, **k)  # type: ignore[arg-type]
        end = time.perf_counter() + 0.001
        while time.perf_counter() < end:
            pass

    s._record = slow  # type: ignore[method-assign]
    for _ in range(ADAPT_EVERY):
        s._on_signal(signal.SIGALRM, sys._getframe())
    assert s.samples == ADAPT_EVERY and s.sample_cost_s() >= 0.001
    assert s.rate_hz == MIN_ADAPTED_HZ and s.lowest_hz == MIN_ADAPTED_HZ
