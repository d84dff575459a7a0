"""The noise verdict of ``compare`` on repeated runs: Welch's t-interval on log times, the practical
margin, too few runs, exact counts first and the runs' order, on hand-built samples and sessions."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from dynaprof.analysis import noise
from dynaprof.analysis.compare import REAL, compare_sessions, verdict_lines
from dynaprof.analysis.repeats import make_repeat, pool
from dynaprof.analysis.student_t import beta_inc, t_cdf, t_quantile
from dynaprof.model import Repeat, load_session, save_session
from dynaprof.model.session import Session
from dynaprof.render.compare_report import compare_markdown, compare_view
from tests.factories import frame, make_session, run_info

SAME_A = [1.00, 1.05, 0.97, 1.02, 0.99]
SAME_B = [1.01, 0.98, 1.04, 0.96, 1.03]
SLOWER = [1.50, 1.55, 1.46, 1.52, 1.49]


def test_student_t_matches_the_tables() -> None:
    for df, t in ((1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (10, 2.2281), (30, 2.0423)):
        assert t_quantile(0.975, df) == pytest.approx(t, abs=1e-4)
    assert t_quantile(0.025, 5) == pytest.approx(-t_quantile(0.975, 5))
    assert t_cdf(0.0, 3) == pytest.approx(0.5) and t_cdf(-2.0, 3) == pytest.approx(0.0697, abs=1e-4)
    assert beta_inc(2.0, 3.0, 0.4) == pytest.approx(0.5248)  # 1 - (0.6^4 + 4 * 0.4 * 0.6^3)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


def test_the_interval_is_welchs_on_the_log_times() -> None:
    base, new = [1.0, 2.0, 4.0], [2.0, 4.0, 8.0]  # logs 0, ln2, 2 ln2: the same spread, shifted by ln2
    est, lo, hi = noise.interval(base, new, ratio=True)
    se = math.sqrt(2 * math.log(2) ** 2 / 3)  # each side's variance is ln2^2; equal spreads: df = 4
    assert est == pytest.approx(2.0)
    half = t_quantile(0.975, 4) * se
    assert (lo, hi) == pytest.approx((2 * math.exp(-half), 2 * math.exp(half)))
    d, dlo, dhi = noise.interval([0.0, 0.1, 0.2], [0.2, 0.3, 0.4], ratio=False)  # seconds
    assert d == pytest.approx(0.2) and dlo < 0.2 < dhi and dhi - 0.2 == pytest.approx(0.2 - dlo)
    assert noise.interval([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], ratio=True) == pytest.approx((2.0, 2.0, 2.0))
    with pytest.raises(ValueError):
        noise.interval([1.0], [1.0, 2.0], ratio=True)


def test_identical_distributions_are_within_noise() -> None:
    v = noise.verdict("total compile", SAME_A, SAME_B)
    assert v.kind == "ratio" and v.verdict == noise.WITHIN
    assert v.low is not None and v.high is not None and v.low <= 1.0 <= v.high
    geo = math.exp(sum(map(math.log, SAME_B)) / 5 - sum(map(math.log, SAME_A)) / 5)
    assert v.estimate == pytest.approx(geo)  # the ratio of geometric means, the interval's centre
    assert (v.base_median, v.new_median) == (1.00, 1.01)  # the text shows the medians


def test_a_clear_shift_is_slower_or_faster_and_its_interval_excludes_one() -> None:
    v = noise.verdict("total compile", SAME_A, SLOWER)
    assert v.verdict == noise.SLOWER and v.low is not None and v.high is not None
    assert 1.4 < v.low <= v.estimate <= v.high < 1.6  # type: ignore[operator]
    back = noise.verdict("total compile", SLOWER, SAME_A)
    assert back.verdict == noise.FASTER and back.high is not None and back.high < 1.0
    assert v.text() == (f"total compile: 1.00 s -> 1.50 s, {v.change_text()} (95% interval {v.interval_text()}; "
                        "5 vs 5 runs; margin 10%): slower")


def test_a_change_under_the_margin_is_within_noise_whatever_the_interval() -> None:
    tight = [1.000, 1.002, 0.998, 1.001]
    shifted = [x * 1.05 for x in tight]  # +5%, an interval far from x1
    at_zero = noise.verdict("total compile", tight, shifted, margin=0.0)
    assert at_zero.verdict == noise.SLOWER and at_zero.low is not None and at_zero.low > 1.04
    assert noise.verdict("total compile", tight, shifted).verdict == noise.WITHIN  # the default 10%
    assert noise.verdict("total compile", tight, shifted, margin=0.03).verdict == noise.SLOWER
    assert noise.verdict("total compile", shifted, tight, margin=0.03).verdict == noise.FASTER
    assert "margin 3%" in noise.verdict("total compile", tight, shifted, margin=0.03).text()
    # a difference in seconds (a run of 0 s on a side) is within the margin of the larger side's mean
    small = noise.verdict("phase x", [0.0, 1.0, 1.0], [1.05, 1.05, 1.06])
    assert small.kind == "difference" and small.verdict == noise.WITHIN


def test_too_few_runs_to_tell_and_how_many_would_do() -> None:
    v = noise.verdict("total compile", [1.0, 1.1], SLOWER)
    assert (v.kind, v.verdict, v.low, v.high, v.estimate) == ("none", noise.TOO_FEW, None, None, None)
    assert v.needed is not None and v.needed >= noise.MIN_RUNS
    assert "2 vs 5 runs): too few runs to tell; " in v.text() and f"--repeat {v.needed})" in v.text()
    one = noise.verdict("total compile", [1.0], [1.0])  # no spread to judge by: the method's minimum
    assert one.needed is None and one.text().endswith("too few runs to tell; 3 runs a side would do "
                                                      "(dynaprof run --repeat 3)")
    # a wide spread: within noise, and how many runs would tell a change the size of the margin
    wide = noise.verdict("total compile", [1.0, 1.4, 0.8], [1.1, 0.7, 1.5])
    assert wide.verdict == noise.WITHIN and wide.needed is not None and wide.needed > 3
    assert f"{wide.needed} runs a side would tell a 10% change" in wide.text()
    assert noise.runs_needed(0.05, 0.10) == noise.MIN_RUNS + 1 and noise.runs_needed(0.30, 0.10) == 78
    assert noise.runs_needed(0.50, 0.05) is None  # past MAX_SUGGESTED
    assert noise.runs_needed(0.05, 0.0) is None


def test_a_zero_side_is_compared_as_a_difference_in_seconds() -> None:
    v = noise.verdict("phase build_guards", [0.0] * 5, [0.20, 0.21, 0.19, 0.22, 0.20])
    assert v.kind == "difference" and v.verdict == noise.SLOWER
    assert v.estimate == pytest.approx(0.204) and v.low is not None and v.low > 0
    assert v.change_text() == "+0.20 s"
    zero = noise.verdict("phase cache", [0.0] * 5, [0.0] * 5)
    assert zero.kind == "difference" and zero.verdict == noise.WITHIN


def test_coverage_and_false_verdicts_on_identical_noisy_runs() -> None:
    """600 pairs of 3 runs a side from one distribution (20% lognormal spread): the 95% interval
    holds x1 in about 95% of pairs (a bootstrap of 3 runs does not), and the margin cuts the false
    verdicts further."""
    rng = random.Random(1)
    held = flagged = flagged_bare = 0
    pairs = 600
    for _ in range(pairs):
        a = [rng.lognormvariate(0, 0.2) for _ in range(3)]
        b = [rng.lognormvariate(0, 0.2) for _ in range(3)]
        _, lo, hi = noise.interval(a, b, ratio=True)
        held += lo <= 1.0 <= hi
        flagged += noise.verdict("total", a, b).verdict != noise.WITHIN
        flagged_bare += noise.verdict("total", a, b, margin=0.0).verdict != noise.WITHIN
    assert 0.93 <= held / pairs <= 0.97
    assert flagged_bare == pairs - held and flagged < flagged_bare


T0 = "2026-11-30T12:00:{:02d}.000+00:00"


def _runs(times: list[float], build: list[float], sampled: bool = True, starts: list[int] | None = None,
          fx_nodes: int = 10) -> Session:
    s = make_session([frame("0/0", compile_time_s=times[0], graph_node_count=fx_nodes)])
    starts = starts if starts is not None else list(range(len(times)))
    s.repeats = [Repeat(i, t, None, 0, True, {"0/0": t}, {"dynamo": t, "build_guards": g},
                        {"forward (model.py:3)": t - g, "whole graph": g} if sampled else {}, T0.format(at))
                 for i, (t, g, at) in enumerate(zip(times, build, starts, strict=True), 1)]
    s.run.repeat = 1
    return s


def _single(at: int) -> Session:
    s = make_session([frame("0/0")])
    s.run = run_info(start_time=T0.format(at))
    return s


def test_compare_leads_with_the_verdict_and_lists_each_phase() -> None:
    base = _runs(SAME_A, [0.3, 0.31, 0.29, 0.3, 0.3])
    new = _runs(SLOWER, [0.3, 0.29, 0.31, 0.3, 0.3], starts=[30, 31, 32, 33, 34])
    cmp = compare_sessions(base, new)
    assert [v.what for v in cmp.noise] == ["total compile", "phase dynamo", "phase build_guards",
                                           "cause forward (model.py:3)", "cause whole graph"]
    assert [v.verdict for v in cmp.noise] == ["slower", "slower", noise.WITHIN, "slower", noise.WITHIN]
    text = compare_markdown(cmp, base, new, ("base", "new"), [])
    lines = text.split("\n")
    assert lines[2].startswith("**Slower:** total compile: 1.00 s → 1.50 s, x1.50 (95% interval x1.")
    assert lines[4].startswith("> Note: the runs were made in blocks: all 5 BASE runs came before the 5 NEW runs")
    assert "Welch t-interval on log times; within noise when it holds x1 or the change is under the 10% margin" \
        in lines[6]
    assert "| phase build\\_guards | 300 ms | 300 ms | x1.00 |" in text and text.count("| within noise |") == 2
    assert "| cause forward (model.py:3) | 700 ms | 1.20 s | x1.71 |" in text
    notes = compare_view(cmp, base, new, {}).notes
    assert notes[0].startswith("over repeated runs, total compile: 1.00 s → 1.50 s, x1.50 (95% interval x1.")
    assert notes[1].startswith("the runs were made in blocks") and "margin" in notes[2]
    unsampled = compare_sessions(base, _runs(SLOWER, [0.3] * 5, sampled=False)).noise
    assert [v.what for v in unsampled] == ["total compile", "phase dynamo", "phase build_guards"]  # no causes
    assert compare_sessions(make_session([frame("0/0")]), make_session([frame("0/0")])).noise == []


def test_exact_counts_lead_the_verdict_without_a_margin() -> None:
    base = _runs(SAME_A, [0.3] * 5, starts=[0, 2, 4, 6, 8])
    new = _runs(SAME_B, [0.3] * 5, starts=[1, 3, 5, 7, 9], fx_nodes=11)  # one FX node more; seconds the same
    cmp = compare_sessions(base, new)
    lines = verdict_lines(cmp)
    assert [w for w, _ in lines] == [REAL, noise.WITHIN]  # alternating runs: no block note
    assert lines[0][1].endswith("FX nodes 10 -> 11 (+1)")
    md = compare_markdown(cmp, base, new, ("base", "new"), []).split("\n")
    assert md[2].startswith("**Real difference:** exact counts differ, so the work differs")
    assert md[4].startswith("**Within noise:** total compile")
    assert compare_view(cmp, base, new, {}).notes[0].startswith("real difference: exact counts differ")
    # single runs: the counts still lead, with no timing verdict
    one = compare_sessions(make_session([frame("0/0", graph_node_count=3)]),
                           make_session([frame("0/0", graph_node_count=5)]))
    assert [w for w, _ in verdict_lines(one)] == [REAL] and one.noise == []
    unknown = compare_sessions(make_session([frame("0/0")]), make_session([frame("0/0", graph_node_count=5)]))
    assert verdict_lines(unknown) == []  # a count one side never measured is no difference


def test_the_block_note_needs_every_start_and_one_side_first() -> None:
    base, new = _runs(SAME_A, [0.3] * 5), _runs(SAME_B, [0.3] * 5, starts=[20, 21, 22, 23, 24])
    assert "all 5 BASE runs came before the 5 NEW runs" in noise.block_note(base, new)
    assert "all 5 NEW runs came before the 5 BASE runs" in noise.block_note(new, base)
    mixed = _runs(SAME_B, [0.3] * 5, starts=[3, 21, 22, 23, 24])  # one NEW run among the BASE runs
    assert noise.block_note(base, mixed) == ""
    single = _single(40)
    assert "all 5 BASE runs came before the NEW run" in noise.block_note(base, single)
    old = _runs(SAME_B, [0.3] * 5, starts=[20, 21, 22, 23, 24])
    old.repeats[2].start_time = None  # a session from before starts were kept
    assert noise.block_note(base, old) == ""
    naive = _runs(SAME_B, [0.3] * 5, starts=[20, 21, 22, 23, 24])
    for r in naive.repeats:
        r.start_time = (r.start_time or "")[:19]  # no time zone: not comparable with the other side's
    assert noise.block_note(base, naive) == ""


def test_each_run_keeps_its_start_and_older_sessions_load(tmp_path: Path) -> None:
    s = _single(7)
    assert make_repeat(1, s, cold=True).start_time == T0.format(7)
    pooled = pool([s, _single(9)])
    assert [r.start_time for r in pooled.repeats] == [T0.format(7), T0.format(9)]
    save_session(_runs(SAME_A, [0.3] * 5), tmp_path / "r")
    path = tmp_path / "r" / "session.json"
    data = json.loads(path.read_text())
    for r in data["repeats"]:
        del r["start_time"]
    path.write_text(json.dumps(data))
    assert [r.start_time for r in load_session(tmp_path / "r").repeats] == [None] * 5


def test_pr_comment_of_repeated_runs_leads_with_the_verdict(tmp_path: Path) -> None:
    from dynaprof.cli import main

    save_session(_runs(SAME_A, [0.3] * 5), tmp_path / "base")
    save_session(_runs(SLOWER, [0.3] * 5, starts=[30, 31, 32, 33, 34]), tmp_path / "new")
    assert main(["pr", str(tmp_path / "base"), str(tmp_path / "new")]) == 0
    comment = (tmp_path / "new" / "pr" / "comment.md").read_text()
    first = comment.split("\n")[:7]
    assert first[0] == "### dynaprof compare: base -> new"
    assert first[2].startswith("**Slower:** total compile: 1.00 s → 1.50 s, x1.50 (95% interval x1.")
    assert first[4].startswith("> Note: the runs were made in blocks")
    assert "within noise when it holds x1 or the change is under the 10% margin" in first[6]
    assert len(comment) < 65536


def _tight(tmp_path: Path) -> tuple[str, str]:
    """BASE and NEW 5% apart with almost no spread: slower at a 3% margin, within noise at 10%."""
    tight = [1.000, 1.002, 0.998, 1.001]
    save_session(_runs(tight, [0.3] * 4), tmp_path / "base")
    save_session(_runs([x * 1.05 for x in tight], [0.3] * 4, starts=[10, 11, 12, 13]), tmp_path / "new")
    return str(tmp_path / "base"), str(tmp_path / "new")


def test_cli_margin_on_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dynaprof.cli import main

    base, new = _tight(tmp_path)
    assert main(["compare", base, new, "-o", str(tmp_path / "out1")]) == 0
    err = capsys.readouterr().err
    assert "margin 10%): within noise" in err and "note: the runs were made in blocks" in err
    assert main(["compare", base, new, "-o", str(tmp_path / "c2"), "--margin", "3"]) == 0
    assert "margin 3%): slower" in capsys.readouterr().err
    assert "**Slower:**" in (tmp_path / "c2" / "compare.md").read_text()
    for bad in ("-1", "100", "nan"):
        assert main(["compare", base, new, "-o", str(tmp_path / "c3"), "--margin", bad]) == 2
        err = capsys.readouterr().err
        assert "--margin must be a percentage" in err and "Traceback" not in err
    assert main(["compare", base, new, "-o", str(tmp_path / "c3"), "--margin", "x"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_cli_margin_on_pr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dynaprof.cli import main

    base, new = _tight(tmp_path)
    assert main(["pr", base, new, "-o", str(tmp_path / "p1")]) == 0
    assert "**Within noise:**" in (tmp_path / "p1" / "comment.md").read_text()
    assert main(["pr", base, new, "-o", str(tmp_path / "p2"), "--margin", "3"]) == 0
    comment = (tmp_path / "p2" / "comment.md").read_text()
    assert "**Slower:**" in comment and "under the 3% margin" in comment
    assert main(["pr", base, new, "--margin", "250"]) == 2
    assert "--margin must be a percentage" in capsys.readouterr().err


def test_cli_pooled_single_runs_note_blocks_but_not_alternation(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from dynaprof.cli import main

    def side(name: str, starts: list[int]) -> list[str]:
        paths = []
        for i, at in enumerate(starts):
            s = _single(at)
            s.frames[0].compile_time_s = 1.0 + 0.01 * i
            save_session(s, tmp_path / f"{name}{i}")
            paths.append(str(tmp_path / f"{name}{i}"))
        return paths

    blocks = ["--base", *side("a", [0, 1, 2]), "--new", *side("b", [3, 4, 5])]
    assert main(["compare", *blocks, "-o", str(tmp_path / "out1")]) == 0
    err = capsys.readouterr().err
    assert "3 vs 3 runs; margin 10%): within noise" in err
    assert "note: the runs were made in blocks: all 3 BASE runs came before the 3 NEW runs" in err
    assert "> Note: the runs were made in blocks" in (tmp_path / "out1" / "compare.md").read_text()
    alternating = ["--base", *side("c", [0, 2, 4]), "--new", *side("d", [1, 3, 5])]
    assert main(["compare", *alternating, "-o", str(tmp_path / "out2")]) == 0
    assert "made in blocks" not in capsys.readouterr().err
    assert main(["pr", *blocks, "-o", str(tmp_path / "p")]) == 0
    assert "> Note: the runs were made in blocks" in (tmp_path / "p" / "comment.md").read_text()
