"""Calls per compiled entry: counted on the compiled graph in live capture, unknown in imported logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import dynaprof
from dynaprof.ingest.trace_to_session import import_torch_trace
from dynaprof.render.terminal import summary_text

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

DATA = Path(__file__).parent / "data" / "torch_trace"


def _double(x: Any) -> Any:
    return x * 2 + 1


def _no_graph(x: Any) -> Any:
    return x  # Dynamo compiles it, but there is no graph to run


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    torch._dynamo.reset()


def test_calls_per_entry_are_exact_and_the_results_unchanged(tmp_path: Path) -> None:
    f = torch.compile(_double, backend="eager", dynamic=False)
    sizes = [2, 3, 2, 2, 4]
    with dynaprof.profile(tmp_path / "run", render=False) as prof:
        out = [f(torch.ones(b)) for b in sizes]
    assert [o.tolist() for o in out] == [[3.0] * b for b in sizes]
    frames = prof.session.frames
    assert [fr.compile_id for fr in frames] == ["0/0", "0/1", "0/2"]
    assert [fr.calls for fr in frames] == [3, 1, 1]
    assert dynaprof.load_session(tmp_path / "run").frames[0].calls == 3  # stored in session.json
    assert _calls_column(summary_text(prof.session, width=120)) == ["3", "1", "1"]


def test_calls_after_the_block_are_not_counted(tmp_path: Path) -> None:
    f = torch.compile(_double, backend="eager")
    with dynaprof.profile(tmp_path / "run", render=False) as prof:
        f(torch.ones(3))
        f(torch.ones(3))
    f(torch.ones(3))  # after the block: the session is already written
    assert [fr.calls for fr in prof.session.frames] == [2]


def test_a_frame_with_no_graph_has_unknown_calls(tmp_path: Path) -> None:
    f = torch.compile(_no_graph, backend="eager")
    with dynaprof.profile(tmp_path / "run", render=False) as prof:
        f(torch.ones(3))
        f(torch.ones(3))
    assert len(prof.session.frames) == 1
    assert prof.session.frames[0].calls is None


def test_imported_logs_have_unknown_calls() -> None:
    s = import_torch_trace(DATA / "cache_warm.log.gz")
    assert s.frames and all(fr.calls is None for fr in s.frames)
    assert set(_calls_column(summary_text(s, width=120))) == {"?"}


def _calls_column(text: str) -> list[str]:
    """The terminal frame table's calls cells (right-aligned under the header)."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "compile id" in line)
    header = lines[at]
    assert header.split()[:6] == ["compile", "id", "frame", "time", "calls", "restarts"]
    end = header.index(" calls ") + len(" calls")
    rows = [line for line in lines[at + 1 :] if line.strip() and line.startswith("  ") and "/" in line[:14]]
    return [line[:end].split()[-1] for line in rows]
