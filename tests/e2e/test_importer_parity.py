"""One script run live under ``dynaprof run --torch-trace``, and its own TORCH_TRACE log imported:
the two importers (the journal's and the log's) must give the same facts: the same frames under
the same keys, the same restart counts, restart details and recompile reasons, and phase times
that agree within a millisecond (the two are timed by different clocks: dynaprof's records and
torch's own events)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from dynaprof.ingest.trace_to_session import OLD_LOG_UNKNOWN, import_torch_trace
from dynaprof.model.session import CompiledFrame, Session
from dynaprof.model.store import load_session
from tests.conftest import profile
from tests.helpers import TESTS_DIR, requires_torch, torch_release

pytestmark = [pytest.mark.torch, pytest.mark.versions]

#: restarts (a graph break inside an inlined call makes Dynamo restart the frame), graph breaks,
#: recompiles (the shape, then an int argument changed), a reset (compile ids come round again:
#: "#1" keys) and a lazy backward compile (":bw" keys), all on torch's cheap backends
SCRIPT = '''
import torch


def helper(x):
    torch._dynamo.graph_break()
    return x * 2


@torch.compile(backend="eager")
def f(x, n):
    return helper(x.sin()) + n


f(torch.randn(4), 1)
f(torch.randn(5), 1)
f(torch.randn(6), 2)
torch._dynamo.reset()
f(torch.randn(4), 1)
g = torch.compile(torch.nn.Linear(4, 4), backend="aot_eager")
g(torch.randn(2, 4)).sum().backward()
'''
#: what both importers must agree on, frame by frame
SAME = ("compile_id", "generation", "kind", "forward_key", "name", "filename", "lineno", "status", "restarts",
        "restart_reasons", "restart_details", "recompile_reason", "trace_id", "graph_breaks", "graph_break_reasons")
#: what a torch 2.4 log does not hold (no graph-break or recompile-reason artifacts, so no break
#: sites for the restart details): the live capture knows them there, the log's import does not
NOT_IN_24_LOG = ("graph_breaks", "graph_break_reasons", "recompile_reason", "restart_details")
#: phase times may differ by this much (seconds)
PHASE_TOLERANCE_S = 1e-3
#: the start time, as both importers write it (UTC, to the millisecond)
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$")


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Session, Session]:
    tmp = tmp_path_factory.mktemp("parity")
    (tmp / "script.py").write_text(SCRIPT)
    trace = tmp / "trace"
    result = profile(tmp, ["script.py"], "--torch-trace", str(trace), "--sampler", "none")
    assert result.returncode == 0, result.stderr
    return load_session(result.run_dir), import_torch_trace(trace)


def _by_key(s: Session) -> dict[str, CompiledFrame]:
    return {f.key: f for f in s.frames}


def test_the_script_has_what_the_parity_is_about(both: tuple[Session, Session]) -> None:
    live, _ = both
    frames = live.frames
    assert any(f.restarts for f in frames) and any(f.restart_details for f in frames)
    assert any(f.graph_breaks for f in frames) and any(f.recompile_reason for f in frames)
    assert any("#" in f.key for f in frames)
    assert any(f.key.endswith(":bw") for f in frames)  # torch 2.4: found from AOT autograd's backward compiler


def test_both_importers_give_the_same_frames_under_the_same_keys(both: tuple[Session, Session]) -> None:
    live, trace = both
    if torch_release() < (2, 5):  # torch 2.4 logs nothing of a lazy backward compile: the import says so
        assert OLD_LOG_UNKNOWN in trace.capture.warnings
        assert not any(f.kind == "backward" for f in trace.frames)
        assert [f.key for f in live.frames if f.kind != "backward"] == [f.key for f in trace.frames]
    else:
        assert [f.key for f in live.frames] == [f.key for f in trace.frames]
    j, t = _by_key(live), _by_key(trace)
    j = {k: f for k, f in j.items() if k in t}  # (torch 2.4: not the backward frames)
    same = SAME if torch_release() >= (2, 5) else tuple(n for n in SAME if n not in NOT_IN_24_LOG)
    differ = {k: [(n, getattr(j[k], n), getattr(t[k], n)) for n in same if getattr(j[k], n) != getattr(t[k], n)]
              for k in j}
    assert {k: d for k, d in differ.items() if d} == {}


@requires_torch("2.5", "torch 2.4 has no phase events, in the log or live")
def test_both_importers_give_the_same_phase_times(both: tuple[Session, Session]) -> None:
    live, trace = both
    j, t = _by_key(live), _by_key(trace)
    off = {k: {p: (j[k].phases.get(p), t[k].phases.get(p)) for p in j[k].phases.keys() | t[k].phases.keys()
               if not math.isclose(j[k].phases.get(p, -1.0), t[k].phases.get(p, -1.0), abs_tol=PHASE_TOLERANCE_S)}
           for k in j}
    assert {k: d for k, d in off.items() if d} == {}
    assert sum(len(f.phases) for f in live.frames) >= 10  # the comparison compared something


def test_both_importers_write_the_start_time_alike(both: tuple[Session, Session]) -> None:
    live, trace = both
    assert ISO_MS.match(live.run.start_time) and ISO_MS.match(trace.run.start_time)


def test_an_imported_logs_restarts_have_their_details(tmp_path: Path) -> None:
    """The log import derives the restart details as the journal's reader does (they were left
    empty: an imported log's report showed no restart reasons)."""
    session = import_torch_trace(TESTS_DIR / "data" / "torch_trace" / "restart.log.gz")
    restarted = [f for f in session.frames if f.restarts]
    assert restarted and all(f.restart_details for f in restarted)
    assert all(d.text and (d.count is None or d.count >= 1) for f in restarted for d in f.restart_details)
