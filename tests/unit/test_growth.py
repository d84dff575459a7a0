"""The growth fit of ``dynaprof sweep`` on synthetic sweeps of known exponents (no torch)."""

from __future__ import annotations

import math

import pytest

from dynaprof.analysis.growth import (
    FAR,
    fit_measure,
    growth,
    lstsq,
    project,
    projection_warning,
    projections,
    verdict,
)
from dynaprof.analysis.growth_gate import FLATTER, STEEPER, WITHIN, check_growth, compare_sweeps, resolve_measure
from dynaprof.errors import SessionError
from dynaprof.model.sweep import SWEEP_SCHEMA_VERSION, is_sweep, load_sweep, save_sweep
from tests.sweeps import make_sweep, restart_sweep


def test_least_squares_recovers_an_exact_power_law() -> None:
    k, log_a, rms = lstsq([2, 4, 8, 16], [3 * n ** 1.5 for n in (2, 4, 8, 16)])
    assert k == pytest.approx(1.5) and math.exp(log_a) == pytest.approx(3.0) and rms == pytest.approx(0, abs=1e-12)
    with pytest.raises(ValueError):
        lstsq([4, 4], [1.0, 2.0])  # one size: no slope


@pytest.mark.parametrize("k", [0.0, 1.0, 2.0, 2.7])
def test_known_exponents_fall_in_their_interval(k: float) -> None:
    g = growth(make_sweep({"total": lambda n: 0.01 * n ** k}, noise=0.08, seed=int(k * 10)))
    fit = g.total
    assert fit is not None and fit.exponent is not None and fit.low is not None and fit.high is not None
    assert fit.low <= k <= fit.high
    assert fit.high - fit.low < 0.3  # 3 runs of +-8% at 4 sizes pin it down
    assert abs(fit.exponent - k) < 0.1 and fit.residual is not None and fit.residual < 0.1


def test_one_run_per_point_has_no_interval_and_counts_are_exact() -> None:
    g = growth(make_sweep({"total": lambda n: n * 0.1}, {"guards": lambda n: 5 * n}, repeat=1))
    total, guards = g.fit("total"), g.fit("guards")
    assert total is not None and total.exponent is not None and total.low is None and not total.has_interval
    assert guards is not None and guards.exponent is not None and guards.exponent == pytest.approx(1.0)
    g3 = growth(make_sweep({"total": lambda n: n * 0.1}, {"guards": lambda n: 5 * n}, repeat=3))
    exact = g3.fit("guards")
    assert exact is not None and exact.low == exact.high == pytest.approx(1.0)  # every run agrees: no spread
    assert "(exact)" in exact.text()


def test_a_measure_absent_at_some_points_is_said_and_never_fitted_as_zero() -> None:
    sweep = make_sweep({"total": lambda n: 0.1 * n,
                        "cause:late": lambda n: None if n < 16 else 0.01 * n ** 2,
                        "cause:once": lambda n: 0.5 if n == 32 else None})
    g = growth(sweep)
    late = g.fit("cause:late")
    assert late is not None and late.absent_at == (4.0, 8.0)
    assert [x for x, _ in late.medians] == [16.0, 32.0]  # fitted where present only
    assert late.exponent == pytest.approx(2.0, abs=0.2)
    assert "absent at LAYERS=4, 8" in late.absence_text("LAYERS")
    once = g.fit("cause:once")
    assert once is not None and once.exponent is None and "one point only (32)" in once.note
    # present in only some runs of a point: those runs are used, and the point is said
    partial = fit_measure("cause:x", "time", [(4, [1.0, None, 1.2]), (8, [2.0, 2.1, 2.2])])
    assert partial.partial_at == ((4, 2, 3),) and "in 2 of 3 runs at 4" in partial.absence_text("N")
    assert partial.absent_at == ()


def test_a_timing_that_disagrees_with_its_counts_is_flagged() -> None:
    sweep = make_sweep({"total": lambda n: 0.1 * n + 0.001 * n ** 2,
                        "group:guard_building": lambda n: 0.001 * n ** 2,  # time as N^2 ...
                        "group:dynamo_tracing": lambda n: 0.1 * n},
                       {"guards": lambda n: 10 * n, "instructions": lambda n: 100 * n})  # ... guards as N
    g = growth(sweep)
    assert [(f.time.measure, f.count.measure) for f in g.flags] == [("group:guard_building", "guards")]
    assert "grows faster than the work counted" in g.flags[0].text
    # agreeing exponents are not flagged, nor are timings without an interval
    assert growth(restart_sweep()).flags == []
    assert growth(make_sweep({"total": lambda n: 0.1 * n, "group:guard_building": lambda n: 0.01 * n ** 2},
                             {"guards": lambda n: 10 * n}, repeat=1)).flags == []


def test_the_verdict_names_the_fastest_growing_cost_that_matters() -> None:
    g = growth(restart_sweep())
    lines = verdict(g)
    assert lines[0].startswith("compile time grows as N^")
    top = lines[1]
    assert top.startswith("restart waste grows as N^2.0 (") or top.startswith("parametrization grows as N^2.0 (")
    assert "with LAYERS: it is " in top and " at 4 and " in top and top.endswith("at 32")
    share_lo, share_hi = g.share(g.fit("restart_waste"), 4.0), g.share(g.fit("restart_waste"), 32.0)  # type: ignore[arg-type]
    assert share_lo is not None and share_hi is not None and share_lo < share_hi
    assert f"{share_lo:.0%} of compile at 4 and {share_hi:.0%} at 32" in top


def test_projection_and_its_warning() -> None:
    g = growth(make_sweep({"total": lambda n: 0.01 * n ** 2, "cause:a": lambda n: 0.01 * n ** 2}))
    p = project(g.total, 64.0)  # type: ignore[arg-type]
    assert p is not None and p.value == pytest.approx(0.01 * 64 ** 2, rel=0.15)
    assert p.low is not None and p.high is not None and p.low <= p.value <= p.high
    assert [q.fit.measure for q in projections(g, 64.0)] == ["total", "cause:a"]
    assert projection_warning(g, 64.0) is None
    far = projection_warning(g, 32 * FAR + 1)
    assert far is not None and "the largest point measured (32)" in far


def test_check_holds_an_interval_above_the_bound_only() -> None:
    g = growth(restart_sweep())
    over = check_growth(g, 1.3, {})
    assert {b.fit.measure for b in over.breaches} >= {"restart_waste"}
    assert "whole graph" not in {b.fit.label for b in over.breaches}
    assert check_growth(g, 2.5, {}).ok
    named = check_growth(g, None, {"guards": 0.9, "restart waste": 3.0})
    assert [b.fit.measure for b in named.breaches] == ["guards"]
    assert check_growth(g, None, {"no such cause": 1.0}).unknown == ["no such cause"]
    assert resolve_measure(g, "Guard_Building") == "group:guard_building"
    assert resolve_measure(g, "whole graph") == "cause:whole graph"
    assert resolve_measure(g, "total") == "total"


def test_compare_says_whether_an_exponent_moved_outside_the_noise() -> None:
    _, _, same = compare_sweeps(restart_sweep(2.0, seed=1), restart_sweep(2.0, seed=2))
    by = {c.measure: c for c in same}
    assert by["restart_waste"].verdict == WITHIN and by["guards"].verdict == WITHIN
    _, _, moved = compare_sweeps(restart_sweep(1.0, seed=1), restart_sweep(2.0, seed=2))
    rw = next(c for c in moved if c.measure == "restart_waste")
    assert rw.verdict == STEEPER and rw.delta == pytest.approx(1.0, abs=0.1)
    assert rw.low is not None and rw.low > 0
    _, _, back = compare_sweeps(restart_sweep(2.0, seed=1), restart_sweep(1.0, seed=2))
    assert next(c for c in back if c.measure == "restart_waste").verdict == FLATTER


def test_sweep_json_round_trips_and_bad_files_are_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sweep = restart_sweep()
    save_sweep(sweep, tmp_path)
    assert is_sweep(tmp_path) and is_sweep(tmp_path / "sweep.json") and not is_sweep(tmp_path / "nope")
    assert load_sweep(tmp_path) == sweep
    bad = tmp_path / "bad"
    bad.mkdir()
    for text, msg in [("{", "not valid JSON"), ("[]", "not a dynaprof sweep"),
                      (f'{{"schema_version": {SWEEP_SCHEMA_VERSION + 1}}}', "newer dynaprof"),
                      ('{"schema_version": 1, "params": "x"}', "invalid sweep")]:
        (bad / "sweep.json").write_text(text)
        with pytest.raises(SessionError, match=msg):
            load_sweep(bad)


def test_the_verdict_names_the_cost_that_adds_the_most_seconds_and_the_faster_small_one_after() -> None:
    """A big cost growing as N^1.8 and a small one as N^1.9: the big one leads (issue: the growth
    verdict names what grows), the faster one follows on a line of its own."""
    sweep = make_sweep({"total": lambda n: 0.05 * n ** 1.8 + 0.001 * n ** 1.9 + 0.5,
                        "cause:parametrization": lambda n: 0.05 * n ** 1.8,
                        "cause:the garbage collector": lambda n: 0.002 * n ** 2.6}, noise=0.0)
    lines = verdict(growth(sweep))
    assert lines[1].startswith("parametrization grows as N^1.8"), lines
    assert len(lines) == 3 and lines[2].startswith("faster but smaller: the garbage collector grows as N^2.6")
    # the case: a big cost as N^1.8, a small user cause as N^1.9: the big one is named
    close = make_sweep({"total": lambda n: 0.05 * n ** 1.8 + 0.002 * n ** 1.9 + 0.5,
                        "cause:parametrization": lambda n: 0.05 * n ** 1.8,
                        "cause:helper (model.py:3)": lambda n: 0.002 * n ** 1.9}, noise=0.0)
    lines = verdict(growth(close))
    assert lines[1].startswith("parametrization grows as N^1.8") and len(lines) == 2, lines


def test_the_collector_is_one_row_of_a_sweep_and_tracing_is_weighed_against_every_inlined_call() -> None:
    from dynaprof.analysis.growth import COUNTS_OF
    from dynaprof.analysis.sweep_measures import run_counts, run_measures
    from dynaprof.model.session import CAUSE_COLLECTOR, Axes
    from tests.factories import frame, make_session

    s = make_session([frame("0/0", compile_time_s=1.0, inlined_calls=10, inlined_calls_discarded=30)])
    s.axes = Axes({CAUSE_COLLECTOR: 0.2, "forward (m.py:1)": 0.8},
                  {"garbage_collection": {CAUSE_COLLECTOR: 0.2}, "dynamo_tracing": {"forward (m.py:1)": 0.8}})
    m = run_measures(s)
    assert "cause:" + CAUSE_COLLECTOR in m and "group:garbage_collection" not in m and "group:dynamo_tracing" in m
    assert run_counts(s)["inlined_calls_all"] == 40
    assert COUNTS_OF["group:dynamo_tracing"].index("inlined_calls_all") < COUNTS_OF["group:dynamo_tracing"].index(
        "inlined_calls")


def test_a_chart_legend_label_wraps_and_is_never_cut() -> None:
    import re

    from dynaprof.render.growth_chart import LEGEND_CHARS, growth_svg, legend_lines

    long = "Module.forward (repro_with_a_long_file_name.py:11)"
    g = growth(make_sweep({"total": lambda n: 0.2 * n, "cause:" + long: lambda n: 0.1 * n,
                           "group:fake_tensor": lambda n: 0.05 * n}))
    svg = growth_svg(g)
    texts = ["".join(re.findall(r"<tspan[^>]*>([^<]*)</tspan>", t))
             for t in re.findall(r"<text[^>]*>(.*?)</text>", svg)]
    joined = [t.replace(" ", "") for t in texts]
    assert any(long.replace(" ", "") in t for t in joined), texts
    assert "..." not in svg and "…" not in svg
    assert all(len(line) <= LEGEND_CHARS for line in legend_lines(long)) and len(legend_lines(long)) > 1


def test_small_causes_roll_up_into_one_series_as_in_the_cause_table() -> None:
    """Issue "one root cause, one finding": the sweep rolls causes up as the cause table does. 40
    lines of 4 files, each under 1% of compile, are a series per file (their sum at every point),
    chosen at the largest point; a big cause keeps its own."""
    from tests.sweeps import make_sweep

    sp = "/venv/lib/python3.11/site-packages/transformers/models/mixtral/"
    lines = {f"cause:forward (mod{i % 4}.py:{i})": (lambda n, i=i: 0.001 * n * (1 + i / 100)) for i in range(40)}
    sweep = make_sweep({"total": lambda n: 1.0 * n, "cause:parametrization": lambda n: 0.9 * n, **lines}, noise=0.0)
    sweep.cause_files = {k.removeprefix("cause:"): f"{sp}mod{int(k.split('mod')[1][0])}.py" for k in lines}
    g = growth(sweep, resamples=50)
    causes = [f.measure for f in g.timings() if f.measure.startswith("cause:")]
    assert "cause:parametrization" in causes
    assert not any(m in causes for m in lines)
    rolled = [f for f in g.timings() if f.measure.endswith("10 lines")]
    assert sorted(f.measure for f in rolled) == [f"cause:forward (mod{i}.py): 10 lines" for i in range(4)]
    rolled = [f for f in rolled if "mod0.py" in f.measure]
    want = sum(law(32) for k, law in lines.items() if "(mod0.py" in k)
    assert rolled[0].median_at(32) == pytest.approx(want)
    assert rolled[0].exponent == pytest.approx(1.0, abs=0.01)
    # a sweep from before (no files) keeps its causes as they were rolled by the row limit only
    sweep.cause_files = {}
    assert "cause:other causes" in [f.measure for f in growth(sweep, resamples=50).timings()]
