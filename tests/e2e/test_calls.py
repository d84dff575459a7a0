"""Calls per compiled entry: counted on the compiled graph in live capture, unknown in imported logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import dynaprof
from dynaprof.ingest.trace_to_session import import_torch_trace
from dynaprof.render.terminal import summary_text
from tests.helpers import TESTS_DIR, torch_release

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

DATA = TESTS_DIR / "data" / "torch_trace"


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
    assert _calls_column(summary_text(prof.session, width=120)) == {"0/0": "3", "0/1": "1", "0/2": "1"}


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
    assert set(_calls_column(summary_text(s, width=120)).values()) == {"?"}


def _calls_column(text: str) -> dict[str, str]:
    """The terminal frame table's calls cells (right-aligned under the header), by compile id (the
    table lists the slowest compiles first: its order is the machine's)."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["id", "frame"])
    header = lines[at]
    assert header.split()[:4] == ["id", "frame", "time", "calls"]
    end = header.index(" calls ") + len(" calls")
    table = lines[at + 1 : next((i for i in range(at + 1, len(lines)) if not lines[i].strip()), len(lines))]
    rows = [line for line in table if line.startswith("  ") and "/" in line[:14]]  # the table ends at a blank line
    return {line.split()[0]: line[:end].split()[-1] for line in rows}


#: the recompile limit's name (torch 2.4: cache_size_limit, later an alias of recompile_limit)
LIMIT = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") else "cache_size_limit"


@pytest.mark.versions  # torch 2.4 raises at the limit before it logs metrics: the window's exception says it
def test_recompile_limit_fallback_is_a_finding_and_a_budget(tmp_path: Path) -> None:
    from dynaprof.analysis.budgets import Budget, check, eager_fallbacks
    from dynaprof.analysis.findings import findings
    from tests.conftest import run_dynaprof

    f = torch.compile(_double, backend="eager", dynamic=False)
    sizes = [2, 3, 4, 5, 6, 4, 2]
    with torch._dynamo.config.patch(**{LIMIT: 2}), dynaprof.profile(tmp_path / "run", render=False) as prof:
        out = [f(torch.ones(b)) for b in sizes]
    assert [o.tolist() for o in out] == [[3.0] * b for b in sizes]  # the eager calls give the same results
    frames = prof.session.frames
    # the compile that hit the limit failed, with the limit's exception (never ``ok``)
    assert [fr.status for fr in frames] == ["ok", "ok", "failed"]
    assert frames[-1].fail_reason and LIMIT in frames[-1].fail_reason, frames[-1].fail_reason
    # sizes 2 (twice) and 3 ran compiled; torch 2.4 runs the whole function eager once the limit is hit
    assert [fr.calls for fr in frames] == ([2, 1, None] if torch_release() >= (2, 5) else [1, 1, None])
    assert [fr.recompile_limit_hit for fr in frames] == [None, None, LIMIT]
    assert all(fr.eager_fallback_calls is None for fr in frames)  # torch runs them unseen: unknown
    by_key = {x.key: x for x in findings(prof.session)}
    # one function, one finding: its recompiles and the limit they reached
    assert "recompile_limit" not in by_key
    rec = by_key["recompiles"].text
    assert rec.startswith("changing sizes: _double (test_calls.py:22)") or "_double (test_calls.py:22)" in rec, rec
    assert "up to its recompile limit (later calls ran uncompiled)" in rec or "(limit hit)" in rec, rec
    assert "mark_dynamic(tensor, dim)" in (by_key["recompiles"].remedy or "")
    assert eager_fallbacks(prof.session) == (1, False)
    result = check(prof.session, Budget(max_eager_fallbacks=0))
    assert [b.message for b in result.breaches] == ["eager fallback calls (at least) 1 > budget 0"]
    assert check(prof.session, Budget(max_eager_fallbacks=1)).ok
    fixture = _fixture_over(tmp_path / "fixture", f, sizes)
    assert fixture.session.frames[-1].recompile_limit_hit == LIMIT
    with pytest.raises(pytest.fail.Exception, match=r"eager fallback calls \(at least\) 1 > budget 0"):
        fixture.assert_budget(max_eager_fallbacks=0)
    fixture.assert_budget(max_eager_fallbacks=1, max_recompiles=2)
    proc = run_dynaprof(["check", str(tmp_path / "run"), "--max-eager-fallbacks", "0"], cwd=tmp_path)
    assert proc.returncode != 0 and "eager fallback calls (at least) 1 > budget 0" in proc.stdout + proc.stderr


def _fixture_over(path: Path, f: Any, sizes: list[int]) -> Any:
    """What the ``dynaprof_profile`` fixture gives a test, after ``f`` ran on ``sizes``."""
    from dynaprof.pytest_plugin import CompileProfile

    torch._dynamo.reset()
    prof = dynaprof.profile(path, render=False)
    prof.start()
    with torch._dynamo.config.patch(**{LIMIT: 2}):
        for b in sizes:
            f(torch.ones(b))
    return CompileProfile(prof)


def test_entries_with_unknown_calls_are_never_taken_for_little_used() -> None:
    from dynaprof.analysis.findings import findings

    s = import_torch_trace(DATA / "graph_break_recompile.log.gz")
    assert all("ran at most once" not in x.text for x in findings(s))


def test_reports_and_compare_show_calls_per_entry(tmp_path: Path) -> None:
    from dynaprof.analysis.compare import Change, compare_sessions
    from dynaprof.render.compare_report import compare_markdown

    f = torch.compile(_double, backend="eager", dynamic=False)
    with dynaprof.profile(tmp_path / "base") as base:
        for b in [2, 3, 2, 2, 4]:
            f(torch.ones(b))
    torch._dynamo.reset()
    with dynaprof.profile(tmp_path / "new", render=False) as new:
        for b in [2, 2]:
            f(torch.ones(b))
    md = (tmp_path / "base" / "summary.md").read_text(encoding="utf-8")
    header = next(line for line in md.splitlines() if line.startswith("| compile id | location |"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    at = cells.index("calls")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines() if line.startswith("| 0/")]
    assert sorted(r[at] for r in rows) == ["1", "1", "3"]
    html = (tmp_path / "base" / "report.html").read_text(encoding="utf-8")
    assert ">calls</th>" in html.replace(" ", "")
    cmp = compare_sessions(base.session, new.session)
    pair = next(p for p in cmp.pairs if p.occurrence == 0)
    assert pair.metrics["calls"] == Change(3.0, 2.0)
    assert cmp.totals["calls"] == Change(5.0, 2.0)
    text = compare_markdown(cmp, base.session, new.session, ("base", "new"), [])
    assert any(line.startswith("| frame | compile id | compile time | calls |") for line in text.splitlines())


def _breaks(x: Any) -> Any:
    y = x * 2
    torch._dynamo.graph_break()
    return y + 1


def test_a_graph_break_counts_the_frame_and_its_resume_function_each(tmp_path: Path) -> None:
    f = torch.compile(_breaks, backend="eager", dynamic=False)
    with dynaprof.profile(tmp_path / "run", render=False) as prof:
        for _ in range(4):
            f(torch.ones(3))
    by_name = {fr.name: fr.calls for fr in prof.session.frames}
    assert by_name["_breaks"] == 4
    resume = [n for n in by_name if n.startswith("torch_dynamo_resume_in__breaks")]
    assert len(resume) == 1 and by_name[resume[0]] == 4


def test_older_sessions_load_with_unknown_calls() -> None:
    s = dynaprof.load_session(TESTS_DIR / "data" / "sessions" / "schema1.json")
    assert s.frames
    assert all(fr.calls is None and fr.eager_fallback_calls is None and fr.recompile_limit_hit is None
               for fr in s.frames)


def test_time_calls_measures_host_time_per_call_next_to_compile_time(tmp_path: Path) -> None:
    f = torch.compile(_double, backend="eager", dynamic=False)
    with dynaprof.profile(tmp_path / "run", time_calls=True) as prof:
        for b in [2, 3, 2, 2, 4]:
            f(torch.ones(b))
    frames = prof.session.frames
    assert [fr.calls for fr in frames] == [3, 1, 1]
    for fr in frames:
        assert fr.call_time_total_s is not None and fr.call_time_median_s is not None
        assert 0 < fr.call_time_median_s <= fr.call_time_total_s < 1.0
    assert frames[1].call_time_total_s == frames[1].call_time_median_s  # one call: its own median
    md = (tmp_path / "run" / "summary.md").read_text(encoding="utf-8")
    assert "| compile id | location | time | calls | run time/call (median) | run time (all calls) |" in md


def test_calls_are_not_timed_unless_asked(tmp_path: Path) -> None:
    f = torch.compile(_double, backend="eager")
    with dynaprof.profile(tmp_path / "run", render=False) as prof:
        f(torch.ones(3))
    assert prof.session.frames[0].calls == 1
    assert prof.session.frames[0].call_time_total_s is None and prof.session.frames[0].call_time_median_s is None


def test_run_counts_and_times_calls_in_the_child(tmp_path: Path) -> None:
    from tests.conftest import profile

    script = tmp_path / "bs.py"
    script.write_text(
        "import torch\n"
        "@torch.compile(backend='eager', dynamic=False)\n"
        "def f(x):\n"
        "    return x * 2 + 1\n"
        "for b in [2, 3, 2, 2, 4]:\n"
        "    print(f(torch.ones(b)).sum().item())\n",
        encoding="utf-8",
    )
    res = profile(tmp_path, [str(script)], "--sampler", "none", "--quiet", "--time-calls")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["6.0", "9.0", "6.0", "6.0", "12.0"]  # as plain python prints it
    frames = dynaprof.load_session(res.run_dir).frames
    assert [fr.calls for fr in frames] == [3, 1, 1]
    assert all(fr.call_time_median_s is not None and fr.call_time_median_s > 0 for fr in frames)
