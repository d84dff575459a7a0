"""A suite on hand-built runs: what it keeps and reads back, each model's summary, the kinds of
cause summed across the models, two suites compared model by model, its gates, and its reports
(structure and escaping). The real runs are in tests/e2e/test_suite.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dynaprof.analysis.suite_compare import compare_suites, compile_time_breaches, regression_breaches
from dynaprof.analysis.suite_facts import kind_totals, model_summaries
from dynaprof.errors import DynaprofError, SessionError
from dynaprof.model.suite import (
    ORIGIN_DYNAPROF,
    SUITE_SCHEMA_VERSION,
    Suite,
    SuiteEntry,
    SuiteRun,
    load_entries,
    load_suite,
    save_suite,
)
from dynaprof.render.suite_chart import suite_svg
from dynaprof.render.suite_report import compare_suites_markdown, render_suite, terminal_lines


def _run(name: str, k: int, total: float | None, kinds: dict[str, float] | None = None,
         counts: dict[str, int] | None = None, error: str | None = None) -> SuiteRun:
    measures = {"total": total, "cause:parametrization": (kinds or {}).get("parametrization", 0.0)} \
        if total is not None else {}
    return SuiteRun(name, k, f"{name}/{k}", 1 if error else 0, error, 1.0,
                    measures={m: v for m, v in measures.items() if v}, counts=dict(counts or {}),
                    kinds=dict(kinds or {}))


def _suite(runs: list[SuiteRun], names: list[str] | None = None, workers: int = 1) -> Suite:
    names = names or sorted({r.entry for r in runs})
    return Suite(SUITE_SCHEMA_VERSION, "zoo.toml", ORIGIN_DYNAPROF, [SuiteEntry(n, f"/{n}.py") for n in names],
                 max(r.repeat for r in runs), True, "local", workers, ["dynaprof", "suite"], "2026-12-07T00:00:00",
                 "2.13.0", "0", runs)


def test_entries_come_from_a_toml_file_or_a_folder(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    for n in ("b", "a"):
        (tmp_path / "models" / f"{n}.py").write_text("pass\n")
    assert [(e.name, Path(e.script).name) for e in load_entries(tmp_path / "models")] == [("a", "a.py"),
                                                                                           ("b", "b.py")]
    toml = tmp_path / "zoo.toml"
    toml.write_text('[[entry]]\nname = "bert"\nscript = "models/a.py"\nargs = ["--only", "BERT"]\n'
                    'env = { TORCHINDUCTOR_COMPILE_THREADS = 1 }\n\n[[entry]]\nscript = "models/b.py"\n')
    bert, b = load_entries(toml)
    assert (bert.name, bert.script, bert.args, bert.env) == ("bert", str((tmp_path / "models/a.py").resolve()),
                                                             ["--only", "BERT"], {"TORCHINDUCTOR_COMPILE_THREADS": "1"})
    assert b.name == "b"  # named by the script's stem


@pytest.mark.parametrize("text, message", [
    ('[[entry]]\nname = "x"\n', "needs script"),
    ('[[entry]]\nscript = "a.py"\n[[entry]]\nscript = "a.py"\n', "is there twice"),
    ('[[entry]]\nname = "../up"\nscript = "a.py"\n', "a name is letters"),
    ('[[entry]]\nscript = "missing.py"\n', "no such file"),
    ("[[entry]\n", "not valid TOML"),
    ("", "the suite has no entry"),
])
def test_a_bad_suite_file_is_a_one_line_error(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "a.py").write_text("pass\n")
    (tmp_path / "zoo.toml").write_text(text)
    with pytest.raises(DynaprofError, match=message) as e:
        load_entries(tmp_path / "zoo.toml")
    assert "\n" not in e.value.message


def test_suite_json_round_trips_and_refuses_a_newer_schema(tmp_path: Path) -> None:
    suite = _suite([_run("a", 1, 2.0, {"user_code": 1.5}, {"guards": 10}), _run("a", 2, None, error="boom")])
    save_suite(suite, tmp_path)
    assert load_suite(tmp_path) == suite
    text = (tmp_path / "suite.json").read_text().replace(f'"schema_version": {SUITE_SCHEMA_VERSION}',
                                                         '"schema_version": 999')
    (tmp_path / "suite.json").write_text(text)
    with pytest.raises(SessionError, match="newer dynaprof"):
        load_suite(tmp_path)


def test_a_model_is_its_median_run_and_its_failures() -> None:
    runs = [_run("a", 1, 3.0, {"user_code": 3.0}, {"guards": 30}),
            _run("a", 2, 1.0, {"user_code": 1.0}, {"guards": 10}),
            _run("a", 3, 2.0, {"user_code": 2.0, "parametrization": 0.5}, {"guards": 20}),
            _run("b", 1, None, error="exit status 1: boom")]
    models = {m.name: m for m in model_summaries(_suite(runs))}
    a, b = models["a"], models["b"]
    assert (a.median_s, a.min_s, a.max_s, a.runs) == (2.0, 1.0, 3.0, 3)
    assert a.spread == pytest.approx(1.0) and a.counts == {"guards": 20}  # the median run's counts
    assert a.kinds == {"user_code": 2.0}  # the median of each kind over the runs (0.5 in one of three: 0)
    assert b.median_s is None and [r.error for r in b.failed] == ["exit status 1: boom"]
    assert [m.name for m in model_summaries(_suite(runs))] == ["a", "b"]  # slowest first, failed last


def test_a_run_that_failed_then_finished_is_not_a_failure() -> None:
    runs = [_run("a", 1, None, error="killed by SIGKILL"), _run("a", 1, 2.0)]
    (a,) = model_summaries(_suite(runs))
    assert a.failed == [] and a.runs == 1


def test_kinds_of_cause_sum_across_models_and_name_where_they_weigh_most() -> None:
    runs = [_run("a", 1, 10.0, {"parametrization": 6.0, "user_code": 4.0}),
            _run("b", 1, 5.0, {"parametrization": 1.0, "recompiles": 3.0, "user_code": 1.0}),
            _run("c", 1, 5.0, {"user_code": 5.0})]
    total, kinds = kind_totals(model_summaries(_suite(runs)))
    assert total == 20.0
    assert [(k.kind, k.seconds, k.share) for k in kinds] == [("user_code", 10.0, 0.5), ("parametrization", 7.0, 0.35),
                                                              ("recompiles", 3.0, 0.15)]
    assert kinds[0].top == [("c", 5.0), ("a", 4.0), ("b", 1.0)] and kinds[1].top == [("a", 6.0), ("b", 1.0)]


def _side(times: dict[str, list[float]], kinds: dict[str, dict[str, float]] | None = None,
          counts: dict[str, dict[str, int]] | None = None) -> Suite:
    return _suite([_run(n, k, t, (kinds or {}).get(n), (counts or {}).get(n)) for n, ts in times.items()
                   for k, t in enumerate(ts, 1)])


def test_two_suites_compare_model_by_model_with_the_geometric_mean() -> None:
    base = _side({"a": [10.0, 10.2, 9.8], "b": [5.0, 5.1, 4.9], "c": [2.0, 2.02, 1.98]},
                 {"a": {"parametrization": 2.0, "user_code": 8.0}}, {"a": {"guards": 100, "kernels": 4}})
    new = _side({"a": [14.0, 14.2, 13.8], "b": [5.0, 5.1, 4.9], "c": [1.0, 1.01, 0.99]},
                {"a": {"parametrization": 6.0, "user_code": 8.0}}, {"a": {"guards": 300, "kernels": 4}})
    cmp = compare_suites(base, new)
    by = {m.name: m for m in cmp.models}
    assert [m.name for m in cmp.slower] == ["a"] and [m.name for m in cmp.faster] == ["c"]
    assert by["b"].verdict is not None and by["b"].verdict.verdict == "within noise"
    assert by["a"].moved == ("parametrization", 4.0) and by["a"].counts == [("guards", 100, 300)]
    assert cmp.headline() == "1 of 3 models slower: a +4.00 s (parametrization); 1 of 3 models faster: c -1.00 s"
    ratios = [14.0 / 10.0, 1.0, 0.5]
    assert cmp.geomean == pytest.approx(math.prod(ratios) ** (1 / 3), rel=1e-3) and cmp.compared == 3
    assert cmp.low is not None and cmp.high is not None and cmp.low < cmp.geomean < cmp.high
    md = compare_suites_markdown(cmp, ("base", "new"))
    assert "| a | 10.00 s | 14.00 s | x1.40 |" in md
    assert "| slower | parametrization +4.00 s | guards 100 -&gt; 300 |" in md


def test_gates_are_per_model_and_beyond_the_noise() -> None:
    base = _side({"a": [10.0, 10.2, 9.8], "b": [5.0, 5.1, 4.9]})
    new = _side({"a": [11.0, 11.2, 10.8], "b": [7.0, 7.1, 6.9]})
    over, checked = compile_time_breaches(new, 8.0)
    assert [b.model for b in over] == ["a"] and checked == 2
    # a: +10%, inside a 15% margin; b: +40%, beyond it
    assert [b.model for b in regression_breaches(compare_suites(base, new, 0.15))] == ["b"]
    assert [b.model for b in regression_breaches(compare_suites(base, new, 0.5))] == []
    # one run a side: no interval, judged on the medians alone, and said so
    (few,) = regression_breaches(compare_suites(_side({"b": [5.0]}), _side({"b": [7.0]}), 0.15))
    assert "judged on medians alone" in few.message


def test_the_reports_escape_user_text_and_say_parallel_runs_slow_each_other() -> None:
    evil = "<img src=x onerror=alert(1)>|`x`"
    runs = [_run("m1", 1, 2.0, {"user_code": 2.0}, {"guards": 5}), _run("m2", 1, None, error=evil)]
    suite = _suite(runs, workers=2)
    suite.notes = ["2 runs at a time on one machine: parallel runs slow each other's compiles"]
    files = render_suite(suite)
    assert set(files) == {"summary.md", "report.html", "causes.svg"}
    html, md = str(files["report.html"]), str(files["summary.md"])
    assert "<img src=x" not in html and "&lt;img src=x" in html
    assert "<img src=x" not in md and "\\|" in md
    assert "slow each other" in md and "slow each other" in html
    lines = terminal_lines(suite, model_summaries(suite))
    assert lines[0].startswith("2 models x 1 run, cold compiler caches, local executor, 2 workers")
    assert any("with failed runs: m2" in x for x in lines)


def test_the_chart_has_a_bar_per_model_split_by_kind_sorted() -> None:
    runs = [_run("small", 1, 1.0, {"user_code": 1.0}), _run("big", 1, 4.0, {"parametrization": 3.0, "user_code": 1.0}),
            _run("<b>", 1, 2.0, {"recompiles": 2.0})]
    svg = suite_svg(model_summaries(_suite(runs)))
    assert svg.startswith("<svg") and "<b>" not in svg and "&lt;b&gt;" in svg
    assert svg.index(">big<") < svg.index("&lt;b&gt;") < svg.index(">small<")  # slowest first


def test_a_thousand_runs_aggregate() -> None:
    """Its time is benchmarks/bench_suite.py's (docs/performance.md), never a pass/fail here."""
    runs = [_run(f"model{i:03d}", k, 1.0 + (i % 7) + k / 10, {"user_code": 1.0, "parametrization": i % 3},
                 {"guards": i, "kernels": k}) for i in range(250) for k in range(1, 5)]
    files = render_suite(_suite(runs))
    models = model_summaries(_suite(runs))
    assert len(models) == 250 and "model249" in str(files["summary.md"])
    assert models[0].median_s == pytest.approx(7.25) and models[0].runs == 4


def test_a_runs_seconds_split_into_kinds_of_cause_each_second_once() -> None:
    """The seed: the parametrization's seconds are its kind, the rest the user's code; the same
    from the axes derived once (a loaded run) as worked out afresh."""
    import dataclasses

    from dynaprof.analysis.suite_facts import cause_kinds, run_facts
    from tests.factories import seed_session

    s = seed_session()
    kinds = cause_kinds(s)
    assert set(kinds) <= {"parametrization", "user_code", "unattributed"} and kinds["parametrization"] > 0
    assert sum(kinds.values()) == pytest.approx(s.samples.seconds if s.samples else 0.0, abs=1e-6)
    fresh = dataclasses.replace(s, axes=None, frames=[dataclasses.replace(f, axes=None) for f in s.frames])
    assert cause_kinds(fresh) == kinds
    measures, counts, again = run_facts(s)
    assert again == kinds and measures["total"] == pytest.approx(s.total_compile_s)
    assert counts["failures"] == 0 and counts["graph_breaks"] == 0
