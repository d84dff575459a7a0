"""dynaprof check: budgets (pure) and the exit statuses CI relies on (0 ok, 1 over, 2 bad input)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynaprof.analysis.budgets import Budget, check, recompiles, summary
from dynaprof.cli import main
from dynaprof.model import Session, save_session
from tests.factories import frame, make_session, seed_session


def _session() -> Session:
    return make_session([
        frame("0/0", name="forward", filename="/w/model.py", lineno=11, start_s=0.0, compile_time_s=2.0,
              guard_count=2639, restarts=2, graph_breaks=1),
        frame("0/1", name="forward", filename="/w/model.py", lineno=11, start_s=3.0, compile_time_s=1.0,
              guard_count=300),
        frame("0/2", name="forward", filename="/w/model.py", lineno=11, start_s=5.0, compile_time_s=0.2,
              guard_count=None),
        frame("1/0", name="helper", filename="/w/util.py", lineno=3, start_s=6.0, compile_time_s=0.0,
              guard_count=1500, graph_breaks=2),
    ])


def test_within_budget() -> None:
    s = _session()
    r = check(s, Budget(max_compile_time_s=5.0, max_restarts=2, max_guards=3000, max_graph_breaks=3,
                        max_recompiles=2))
    assert r.ok and r.breaches == []
    assert summary(s, r) == ("ok: 4 compiled frames, 3.20 s compile time; compile time 3.20 s <= 5.00 s; "
                             "restarts 2 <= 2; graph breaks 3 <= 3; recompiles 2 <= 2; "
                             "guards per frame (most 2,639) <= 3,000")


def test_breaches_are_named() -> None:
    s = _session()
    r = check(s, Budget(max_compile_time_s=2.0, max_restarts=1, max_guards=1000, max_graph_breaks=0,
                        max_recompiles=1))
    assert [b.message for b in r.breaches] == [
        "compile time 3.20 s > budget 2.00 s",
        "restarts 2 > budget 1",
        "graph breaks 3 > budget 0",
        "recompiles 2 > budget 1",
        "guards in 0/0 forward (model.py:11): 2,639 > budget 1,000",
        "guards in 1/0 helper (util.py:3): 1,500 > budget 1,000",
    ]
    assert [b.frame for b in r.breaches if b.limit == "max_guards"] == ["0/0", "1/0"]
    assert summary(s, r) == "over budget: 6 breaches (4 compiled frames, 3.20 s compile time)"


def test_an_unknown_count_is_never_within_budget() -> None:
    """An imported torch 2.4 log cannot show its graph breaks: the budget cannot be shown to hold."""
    s = _session()
    s.frames[2].graph_breaks = None
    r = check(s, Budget(max_graph_breaks=3, max_restarts=2))
    assert [b.message for b in r.breaches] == ["graph breaks unknown in this session (budget 3)"]
    assert r.checked == ["restarts 2 <= 2"]


def test_recompiles_count_per_generation() -> None:
    s = _session()
    assert recompiles(s) == 2
    s.frames.append(frame("0/0#1", generation=1, name="forward", filename="/w/model.py", lineno=11, start_s=9.0))
    assert recompiles(s) == 2  # a compile after torch._dynamo.reset() is not a recompile


def test_regression() -> None:
    base, new = seed_session(False), seed_session(True)
    r = check(new, Budget(max_regression_pct=20), baseline=base)
    assert [b.message for b in r.breaches] == ["compile time regressed +300.0% (0.30 s -> 1.20 s) > budget 20%"]
    assert check(new, Budget(max_regression_pct=400), baseline=base).ok
    assert check(base, Budget(max_regression_pct=0), baseline=new).ok  # faster is fine
    empty = make_session([])
    assert not check(new, Budget(max_regression_pct=50), baseline=empty).ok
    assert check(empty, Budget(max_regression_pct=50), baseline=empty).ok
    with pytest.raises(ValueError):
        check(new, Budget(max_regression_pct=5))


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    save_session(seed_session(False), tmp_path / "plain")
    save_session(seed_session(True), tmp_path / "param")
    return tmp_path


def test_cli_exit_0(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(runs / "param"), "--max-compile-time", "2", "--max-guards", "3000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: 1 compiled frame, 1.20 s compile time; compile time 1.20 s <= 2.00 s")
    assert main(["check", str(runs / "param" / "session.json"), "--max-compile-time", "2s"]) == 0
    assert main(["check", str(runs / "param"), "--baseline", str(runs / "plain"), "--max-regression", "400%"]) == 0


def test_cli_exit_1(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", str(runs / "param"), "--max-compile-time", "1", "--max-guards", "1000", "--max-restarts", "0"]
    assert main(argv) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == ["over budget: 2 breaches (1 compiled frame, 1.20 s compile time)",
                   "  - compile time 1.20 s > budget 1.00 s",
                   "  - guards in 0/0 forward (repro.py:11): 2,639 > budget 1,000",
                   "  ok: restarts 0 <= 0"]
    assert main(["check", str(runs / "param"), "--baseline", str(runs / "plain"), "--max-regression", "20"]) == 1
    assert "regressed +300.0%" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "message"), [
    ([], "no budget given"),
    (["--max-guards", "x"], "expected a whole number"),
    (["--max-guards", "1.5"], "expected a whole number"),
    (["--max-compile-time", "-1"], ">= 0"),
    (["--max-compile-time", "nan"], ">= 0"),
    (["--max-regression", "5"], "needs --baseline"),
    (["--baseline", "RUNS/plain"], "needs --max-regression"),
    (["--max-regression", "5", "--baseline", "RUNS/nowhere"], "no such file"),
])
def test_cli_exit_2(runs: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    args = [a.replace("RUNS", str(runs)) for a in args]
    assert main(["check", str(runs / "param"), *args]) == 2
    assert message in capsys.readouterr().err


def test_cli_missing_or_corrupt_run(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(runs / "missing"), "--max-guards", "5"]) == 2
    assert "no such file" in capsys.readouterr().err
    (runs / "bad.json").write_text("{not json")
    assert main(["check", str(runs / "bad.json"), "--max-guards", "5"]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_max_fx_nodes_is_per_frame_and_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = _session()
    for f, nodes in zip(s.frames, (120, 40, None, 95), strict=True):
        f.graph_node_count = nodes
    r = check(s, Budget(max_fx_nodes=90))
    assert [(b.limit, b.frame, b.message) for b in r.breaches] == [
        ("max_fx_nodes", "0/0", "FX nodes in 0/0 forward (model.py:11): 120 > budget 90"),
        ("max_fx_nodes", "1/0", "FX nodes in 1/0 helper (util.py:3): 95 > budget 90")]
    assert check(s, Budget(max_fx_nodes=120)).checked == ["FX nodes per frame (most 120) <= 120"]
    save_session(s, tmp_path / "run")
    assert main(["check", str(tmp_path / "run"), "--max-fx-nodes", "100"]) == 1
    assert "  - FX nodes in 0/0 forward (model.py:11): 120 > budget 100" in capsys.readouterr().out.splitlines()
