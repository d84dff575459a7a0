"""CPU instructions in compile: counted where the machine has a hardware counter, left out (and said
so) where it has none, and carried from the journal to ``compare`` as an exact count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dynaprof.capture.hooks import instructions
from dynaprof.capture.recorder import NotHooked


def test_a_cpu_counter_is_found_only_where_an_event_source_offers_instructions(tmp_path: Path) -> None:
    (tmp_path / "software" / "events").mkdir(parents=True)
    (tmp_path / "tracepoint").mkdir()
    assert not instructions.has_cpu_counter(tmp_path)
    (tmp_path / "cpu" / "events").mkdir(parents=True)
    (tmp_path / "cpu" / "events" / "instructions").write_text("event=0xc0\n")
    assert instructions.has_cpu_counter(tmp_path)
    assert not instructions.has_cpu_counter(tmp_path / "missing")


class _Counter:
    def __init__(self, start: int) -> None:
        self.first, self.ended = start, []

    def start(self) -> int:
        return self.first

    def end(self, i: int) -> int:
        self.ended.append(i)
        return 1234


class _Recorder:
    instructions: Any = None


def _install(monkeypatch: pytest.MonkeyPatch, counter: _Counter, pmu: bool) -> _Recorder:
    fake_c = type("C", (), {"_instruction_counter": counter})
    monkeypatch.setattr(instructions, "has_cpu_counter", lambda root=None: pmu)
    monkeypatch.setattr(instructions, "_private", lambda name: fake_c)
    rec = _Recorder()
    instructions.install_instruction_counter(rec)  # type: ignore[arg-type]
    return rec


def test_the_counter_is_used_only_where_it_works(monkeypatch: pytest.MonkeyPatch) -> None:
    works = _Counter(3)
    assert _install(monkeypatch, works, True).instructions is works and works.ended == [3]  # probed once
    with pytest.raises(NotHooked):  # no PMU: never even asked (it would print to the script's stderr)
        _install(monkeypatch, _Counter(3), False)
    with pytest.raises(NotHooked):  # a PMU, but perf events are refused
        _install(monkeypatch, _Counter(-1), True)


def test_a_journal_s_count_reaches_the_frame_and_compare() -> None:
    from dynaprof.analysis.compare import WORK_COUNTS, run_metrics
    from dynaprof.ingest.assemble import ParentFacts, assemble
    from tests.helpers import JOURNAL

    records = [dict(r) for r in JOURNAL]
    for r in records:
        if r["t"] == "compile_end":
            r["instructions"] = 987654321
    s = assemble(records, ParentFacts(["tiny.py"], 0))
    assert [f.cpu_instructions for f in s.frames if f.key == "0/0"] == [987654321]
    assert run_metrics(s)["cpu_instructions"] == 987654321 and "cpu_instructions" in WORK_COUNTS
    plain = assemble(JOURNAL, ParentFacts(["tiny.py"], 0))
    assert run_metrics(plain)["cpu_instructions"] is None  # not counted: shown as ?, never as 0
