"""The noise verdict of ``compare`` on repeated runs: a bootstrap interval of the
ratio of medians, on hand-built samples."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from dynaprof.analysis import noise
from dynaprof.analysis.compare import compare_sessions
from dynaprof.model import Repeat
from dynaprof.model.session import Session
from dynaprof.render.compare_report import compare_markdown
from tests.factories import frame, make_session

SAME_A = [1.00, 1.05, 0.97, 1.02, 0.99]
SAME_B = [1.01, 0.98, 1.04, 0.96, 1.03]
SLOWER = [1.50, 1.55, 1.46, 1.52, 1.49]


def test_identical_distributions_are_within_noise() -> None:
    v = noise.verdict("total compile", SAME_A, SAME_B)
    assert v.kind == "ratio" and v.verdict == noise.WITHIN
    assert v.low is not None and v.high is not None and v.low <= 1.0 <= v.high
    assert v.estimate == pytest.approx(1.01 / 1.00)


def test_a_clear_shift_is_slower_or_faster_and_its_interval_excludes_one() -> None:
    v = noise.verdict("total compile", SAME_A, SLOWER)
    assert v.verdict == "slower" and v.low is not None and v.high is not None
    assert 1.3 < v.low <= v.estimate <= v.high < 1.7  # type: ignore[operator]
    back = noise.verdict("total compile", SLOWER, SAME_A)
    assert back.verdict == "faster" and back.high is not None and back.high < 1.0
    assert v.text() == (f"total compile: 1.00 s -> 1.50 s, x1.50 (95% interval {v.interval_text()}; 5 vs 5 runs): "
                        "slower")


def test_the_bootstrap_is_deterministic_for_a_seed() -> None:
    rng = random.Random(3)
    base, new = [rng.uniform(1, 2) for _ in range(40)], [rng.uniform(1, 2) for _ in range(40)]
    a = noise.interval(base, new, ratio=True, seed=7)
    assert a == noise.interval(base, new, ratio=True, seed=7)
    assert a != noise.interval(base, new, ratio=True, seed=8)  # the seed is what fixes it


def test_a_zero_side_is_compared_as_a_difference_in_seconds() -> None:
    v = noise.verdict("phase build_guards", [0.0] * 5, [0.20, 0.21, 0.19, 0.22, 0.20])
    assert v.kind == "difference" and v.verdict == "slower"
    assert v.estimate == pytest.approx(0.20) and v.low is not None and v.low > 0
    assert v.change_text() == "+0.20 s"
    zero = noise.verdict("phase cache", [0.0] * 5, [0.0] * 5)
    assert zero.kind == "difference" and zero.verdict == noise.WITHIN


def test_one_run_on_a_side_gives_no_interval() -> None:
    v = noise.verdict("total compile", [1.0], SLOWER)
    assert (v.kind, v.verdict, v.low, v.high) == ("none", "no interval", None, None)
    assert "no interval; repeat each side" in v.text()


def test_false_positive_rate_on_identical_noisy_runs_is_near_five_percent() -> None:
    """200 pairs of N=5 runs drawn from one distribution (30% lognormal noise): the verdict calls few
    of them a change (3% with these seeds; the bound leaves room for a small-sample bootstrap)."""
    rng = random.Random(1)
    flagged = 0
    pairs = 200
    for i in range(pairs):
        a = [rng.lognormvariate(0, 0.3) for _ in range(5)]
        b = [rng.lognormvariate(0, 0.3) for _ in range(5)]
        flagged += noise.verdict("total", a, b, seed=i).verdict != noise.WITHIN
    assert flagged / pairs <= 0.15


def _runs(times: list[float], build: list[float], sampled: bool = True) -> Session:
    s = make_session([frame("0/0", compile_time_s=times[0])])
    s.repeats = [Repeat(i, t, None, 0, True, {"0/0": t}, {"dynamo": t, "build_guards": g},
                        {"forward (model.py:3)": t - g, "whole graph": g} if sampled else {})
                 for i, (t, g) in enumerate(zip(times, build, strict=True), 1)]
    s.run.repeat = 1
    return s


def test_compare_leads_with_the_verdict_and_lists_each_phase() -> None:
    base = _runs(SAME_A, [0.3, 0.31, 0.29, 0.3, 0.3])
    new = _runs(SLOWER, [0.3, 0.29, 0.31, 0.3, 0.3])
    cmp = compare_sessions(base, new)
    assert [v.what for v in cmp.noise] == ["total compile", "phase dynamo", "phase build_guards",
                                           "cause forward (model.py:3)", "cause whole graph"]
    assert [v.verdict for v in cmp.noise] == ["slower", "slower", noise.WITHIN, "slower", noise.WITHIN]
    text = compare_markdown(cmp, base, new, ("base", "new"), [])
    lines = text.split("\n")
    assert lines[2].startswith("**Slower:** total compile: 1.00 s → 1.50 s, x1.50 (95% interval x1.")
    assert "bootstrap of the ratio of medians, 2,000 resamples" in lines[4]
    assert "| phase build\\_guards | 300 ms | 300 ms | x1.00 |" in text and text.count("| within noise |") == 2
    assert "| cause forward (model.py:3) | 700 ms | 1.20 s | x1.71 |" in text
    from dynaprof.render.compare_report import compare_view

    notes = compare_view(cmp, base, new, {}).notes
    assert notes[0].startswith("over repeated runs, total compile: 1.00 s → 1.50 s, x1.50 (95% interval x1.")
    unsampled = compare_sessions(base, _runs(SLOWER, [0.3] * 5, sampled=False)).noise
    assert [v.what for v in unsampled] == ["total compile", "phase dynamo", "phase build_guards"]  # no causes
    assert compare_sessions(make_session([frame("0/0")]), make_session([frame("0/0")])).noise == []


def test_pr_comment_of_repeated_runs_leads_with_the_verdict(tmp_path: Path) -> None:
    from dynaprof.cli import main
    from dynaprof.model import save_session

    save_session(_runs(SAME_A, [0.3] * 5), tmp_path / "base")
    save_session(_runs(SLOWER, [0.3] * 5), tmp_path / "new")
    assert main(["pr", str(tmp_path / "base"), str(tmp_path / "new")]) == 0
    comment = (tmp_path / "new" / "pr" / "comment.md").read_text()
    first = comment.split("\n")[:5]
    assert first[0] == "### dynaprof compare: base -> new"
    assert first[2].startswith("**Slower:** total compile: 1.00 s → 1.50 s, x1.50 (95% interval x1.")
    assert "within noise when it holds x1" in first[4]
    assert len(comment) < 65536
