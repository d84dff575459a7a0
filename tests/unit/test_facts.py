"""Facts: every cache entry's recompile reasons; torch's raw restart reasons
kept beside their words, locations and per-restart counts; attempts from samples; inlined calls
split into final and discarded; samples clipped to compile time; unknown never shown as 0."""

from __future__ import annotations

from typing import Any

import pytest

from dynaprof.analysis.compare import compare_sessions, run_metrics, value
from dynaprof.analysis.findings import findings
from dynaprof.ingest.assemble import ParentFacts, assemble
from dynaprof.model.session import GraphBreak, display_id
from tests.factories import frame, make_session

FACTS = ParentFacts(command=["dynaprof", "run", "x.py"], exit_status=0, sampler="builtin", requested_hz=1000.0)


def _journal(*extra: dict[str, Any], restarts: int = 0, duration: float = 1.0) -> list[dict[str, Any]]:
    return [
        {"t": "start", "pid": 1, "target": "x.py", "epoch_ns": 0},
        {"t": "hooks", "items": ["compile_windows", "properties", "inlines"]},
        {"t": "fn", "items": [[1, "_compile", "/t/torch/_dynamo/convert_frame.py", 10, "python"]]},
        {"t": "compile_start", "key": "0/0", "cid": "0/0", "tid": 1, "ts": 0.5, "name": "f", "file": "/w/x.py",
         "line": 3, "call_site": [["<module>", "<string>", 1], ["<module>", "/w/x.py", 9]]},
        *extra,
        {"t": "compile_end", "key": "0/0", "ts": 0.5 + duration, "duration": duration, "attempt": restarts,
         "inlines": 120, "inlines_final": 20, "recompile_reasons": None},
        {"t": "end", "exit_status": 0, "reason": "exited", "ts": 3.0},
    ]


def test_recompile_reason_holds_every_cache_entrys_failures() -> None:
    recs = _journal({"t": "metrics", "key": "0/0", "tid": 1, "m": {"recompile_reason": "0/1: size mismatch"}})
    recs[-2]["recompile_reasons"] = ["0/1: tensor 'x' size mismatch at index 0. expected 3, actual 4",
                                     "0/0: tensor 'x' dtype mismatch. expected Float, actual Double"]
    f = assemble(recs, FACTS).frames[0]
    reason = f.recompile_reason or ""
    assert "0/1: tensor 'x' size mismatch" in reason and "0/0: tensor 'x' dtype mismatch" in reason


def test_restart_reasons_raw_and_in_words_with_counts() -> None:
    raw = ["<class 'torch._dynamo.exc.UnspecializeRestartAnalysis'>"]
    recs = _journal({"t": "metrics", "key": "0/0", "tid": 1, "m": {"restart_reasons": raw}}, restarts=3)
    f = assemble(recs, FACTS).frames[0]
    assert f.restart_reasons == raw  # torch's value, untouched
    (d,) = f.restart_details
    assert d.count == 3 and "UnspecializeRestartAnalysis" in d.text and not d.text.startswith("<class")
    two = ["Message: None Hint: do this", "<class 'torch._dynamo.exc.SpeculationRestartAnalysis'>"]
    recs = _journal({"t": "metrics", "key": "0/0", "tid": 1, "m": {"restart_reasons": two}}, restarts=3)
    f = assemble(recs, FACTS).frames[0]
    assert [d.count for d in f.restart_details] == [None, None]  # a set: counts unknown
    assert all("Message: None" not in d.text for d in f.restart_details)


def test_restart_reason_gets_the_graph_break_site() -> None:
    f = frame(restarts=1, restart_reasons=["print() is not supported"],
              graph_break_reasons=[GraphBreak("print() is not supported", "/w/x.py", 16)])
    from dynaprof.ingest.torch_metrics import restart_details

    (d,) = restart_details(f)
    assert (d.filename, d.lineno, d.count) == ("/w/x.py", 16, 1)


def test_attempts_from_samples_when_torch_does_not_time_them() -> None:
    stacks = {"t": "stacks", "items": [["0/0", 0, 1, [1], [], 300, 0.3], ["0/0", 1, 1, [1], [], 200, 0.2],
                                       ["0/0", 2, 1, [1], [], 100, 0.1]]}
    f = assemble(_journal(stacks, restarts=2), FACTS).frames[0]
    assert [(a.index, a.source) for a in f.attempts] == [(0, "sampled"), (1, "sampled"), (2, "sampled")]
    assert [a.duration_s for a in f.attempts] == [0.3, 0.2, 0.1] and all(a.start_s is None for a in f.attempts)


def test_inlined_calls_split_into_final_and_discarded() -> None:
    f = assemble(_journal(restarts=1), FACTS).frames[0]
    assert (f.inlined_calls, f.inlined_calls_discarded) == (20, 100)


def test_samples_never_exceed_compile_time_and_say_so() -> None:
    stacks = {"t": "stacks", "items": [["0/0", 0, 1, [1], [], 1300, 1.3]]}
    s = assemble(_journal(stacks, duration=1.0), FACTS)
    f = s.frames[0]
    assert s.samples is not None and abs(s.samples.seconds - 1.0) < 1e-6
    assert abs(f.sampled_clipped_s - 0.3) < 1e-6
    assert any("scaled down" in w and "300.0 ms" in w for w in s.capture.warnings)


def test_call_site_without_dynaprofs_bootstrap() -> None:
    f = assemble(_journal(), FACTS).frames[0]
    assert [(c.filename, c.lineno) for c in f.call_site] == [("/w/x.py", 9)]


def test_one_compile_id_format() -> None:
    f = frame("0/0#1", compile_id="0/0", trace_id="0/0_1", generation=1, restarts=1)
    assert display_id(f) == "0/0_1 gen 1"
    # a reset before the first use of an id (the seed resets before its only compile): nothing to tell apart
    assert display_id(frame("0/0", compile_id="0/0", trace_id="0/0", generation=1)) == "0/0"


def test_graph_break_verdict_names_the_line_and_cause() -> None:
    broken = frame("0/0", compile_time_s=1.0, graph_breaks=1, restarts=3,
                   graph_break_reasons=[GraphBreak("builtin print is not supported", "/w/x.py", 16)])
    broken.attempts = []
    broken.metrics["dynamo_time_before_restart_s"] = 0.3
    resume = frame("1/0", name="torch_dynamo_resume_in_step_at_16", compile_time_s=0.1, start_s=2.0)
    s = make_session([broken, resume])
    top = findings(s)
    # the break and its restarts are one finding, at their site (issue: one root cause, one finding)
    gb = next(f for f in top if f.key == "site:x.py:16")
    assert "graph break at x.py:16" in gb.text and "print" in gb.text and "3 restarts" in gb.text
    assert abs(gb.seconds - 0.4) < 1e-9


def test_compare_prints_unknown_not_zero() -> None:
    old = make_session([frame("0/0", compile_time_s=1.0)])
    old.capture.hooks = ["compile_windows", "metrics"]  # torch 2.4-like: no properties, no phases
    new = make_session([frame("0/0", compile_time_s=1.0)])
    new.capture.hooks = ["compile_windows", "metrics", "properties", "phases"]
    m = run_metrics(old)
    assert m["parametrization_s"] is None and m["backward_s"] is None
    assert value("parametrization_s", m["parametrization_s"], False) == "?"
    cmp = compare_sessions(old, new)
    assert cmp.totals["parametrization_s"].base is None


def test_a_failure_type_reads_as_its_class_name_on_every_torch() -> None:
    from dynaprof.ingest.torch_metrics import fail_type_name

    assert fail_type_name("<class 'torch._dynamo.exc.BackendCompilerFailed'>") == "BackendCompilerFailed"  # 2.4
    assert fail_type_name("BackendCompilerFailed") == "BackendCompilerFailed"  # 2.13
    assert fail_type_name("<class 'KeyError'>") == "KeyError" and fail_type_name("") is None


def test_an_adapted_rate_is_said_as_adapted_not_as_a_shortfall() -> None:
    """The default rate lowered to 150 Hz: the session keeps the rates used, and the summary and the
    flamegraph header say the rate adapted, not that 150 of 1,000 Hz were achieved."""
    from dynaprof.render.base import RenderContext
    from dynaprof.render.flamegraph import render_flamegraphs
    from dynaprof.render.markdown import render_markdown

    stacks = {"t": "stacks", "items": [["0/0", 0, 1, [1], [], 150, 1.0]]}
    sampler = {"t": "sampler", "source": "builtin", "requested_hz": 1000, "seconds": 1.0, "errors": 0,
               "notes": [], "adapted_hz": [150.0, 150.0]}
    s = assemble(_journal(stacks, sampler), FACTS)
    assert s.samples is not None and s.samples.adapted_hz == [150.0, 150.0]
    assert "builtin at 150 Hz (adapted to 150 Hz from the requested 1,000 Hz)" in str(
        render_markdown(RenderContext(s))["summary.md"])
    svg = str(render_flamegraphs(RenderContext(s))["flame-compiler.svg"])
    assert "adapted to 150 Hz from the requested 1,000 Hz" in svg and "(requested 1,000 Hz" not in svg
    for bad in ([150.0], [0, 150.0], ["x", 150.0], 150.0):  # malformed: read as not adapted
        s = assemble(_journal(stacks, dict(sampler, adapted_hz=bad)), FACTS)
        assert s.samples is not None and s.samples.adapted_hz == []
    varying = assemble(_journal(stacks, dict(sampler, adapted_hz=[150.0, 300.0])), FACTS)
    assert "adapted to 150-300 Hz" in str(render_markdown(RenderContext(varying))["summary.md"])


def test_what_sampling_cost_is_kept_and_said_from_the_samplers_own_measures() -> None:
    """The sampler's record carries its signal samples, the seconds they took and the machine's
    signal floor: the session's cost is floor x samples + their own time, and the summary says it
    as a share of compile time. Without a floor (or from an older journal) nothing is said."""
    from dynaprof.render.base import RenderContext
    from dynaprof.render.markdown import render_markdown

    stacks = {"t": "stacks", "items": [["0/0", 0, 1, [1], [], 200, 1.0]]}
    sampler = {"t": "sampler", "source": "builtin", "requested_hz": 1000, "seconds": 1.0, "errors": 0,
               "notes": [], "signal_samples": 200, "own_s": 0.01, "floor_s": 75e-6}
    s = assemble(_journal(stacks, sampler), FACTS)
    assert s.samples is not None and s.samples.signal_samples == 200
    assert s.samples.cost_s == pytest.approx(0.01 + 200 * 75e-6)
    share = 100 * s.samples.cost_s / s.total_compile_s
    summary = str(render_markdown(RenderContext(s))["summary.md"])
    assert f"({share:.1f}%: 200 timer signals at 75 us each" in summary
    for missing in ("floor_s", "own_s"):
        partial = assemble(_journal(stacks, {k: v for k, v in sampler.items() if k != missing}), FACTS)
        assert partial.samples is not None and partial.samples.cost_s is None
        assert "sampling cost the compile" not in str(render_markdown(RenderContext(partial))["summary.md"])
    for bad in (-1.0, "x", float("nan")):  # malformed: not known
        odd = assemble(_journal(stacks, dict(sampler, own_s=bad)), FACTS)
        assert odd.samples is not None and odd.samples.own_s is None and odd.samples.cost_s is None
