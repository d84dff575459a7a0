"""Findings: the sentences that lead every summary."""

from __future__ import annotations

import pytest

from dynaprof.analysis.findings import discarded_seconds, findings, hottest, totals
from dynaprof.model import Attempt, GraphBreak
from tests.factories import frame, make_session, seed_session


def test_seed_names_parametrization_in_user_terms() -> None:
    """The verdict is the biggest cause, named by property and parametrization class, with its phases."""
    text = hottest(seed_session())
    assert text.startswith(
        "parametrization (64 properties via Parametrization: Linear.weight x32, Linear.bias x32) cost 840 ms "
        "of 1.20 s compile (70%): 840 ms Dynamo tracing"
    )
    keys = [f.key for f in findings(seed_session())]
    assert "parametrization" not in keys  # the exact-timer sentence would say the same thing again


def test_plain_run_names_the_user_code_that_cost_most() -> None:
    assert hottest(seed_session(False)).startswith("Module.forward (repro.py:11) cost 180 ms of 300 ms compile")


def test_no_compile_says_so() -> None:
    assert hottest(make_session([])) == "no torch.compile compilation happened in this run"


def test_restarts_count_and_waste() -> None:
    f = frame(
        "0/0",
        restarts=2,
        restart_reasons=["graph break in helper"],
        compile_time_s=1.0,
        attempts=[Attempt(0, 1.0, 0.3), Attempt(1, 1.3, 0.2), Attempt(2, 1.5, 0.5)],
    )
    assert discarded_seconds(f) == 0.5
    found = {x.key: x for x in findings(make_session([f]))}
    assert found["restarts"].text.startswith("2 restarts in 1 frame threw away 500 ms (50% of compile)")
    assert "graph break in helper" in found["restarts"].text


def test_recompiles_are_grouped_by_code_location() -> None:
    frames = [
        frame("0/0", start_s=0.0),
        frame("0/1", start_s=2.0, recompile_reason="tensor 'x' dtype mismatch"),
        frame("0/2", start_s=4.0, recompile_reason="tensor 'x' size mismatch"),
    ]
    found = {x.key: x for x in findings(make_session(frames))}
    assert "recompiled 2 times" in found["recompiles"].text
    assert "x changed size" in found["recompiles"].text


def test_graph_break_totals() -> None:
    f = frame("0/0", graph_breaks=2, graph_break_reasons=[GraphBreak("print"), GraphBreak("print")])
    t = totals(make_session([f, frame("1/0", start_s=3)]))
    assert t["graph_breaks"] == 2 and t["frames"] == 2
    assert any(x.key == "graph_breaks" for x in findings(make_session([f])))


def test_a_failed_compile_is_ranked_by_the_seconds_it_lost_and_says_the_frame_runs_eagerly() -> None:
    f = frame("0/0", status="failed", fail_type="BackendCompilerFailed", fail_reason="backend exploded",
              compile_time_s=2.0)
    text = hottest(make_session([f, frame("1/0", name="other", start_s=3, compile_time_s=1.0)]))
    assert text.startswith("failed compiles: 1 compile failed, 2.00 s lost")
    assert "runs eagerly" in text and "BackendCompilerFailed: backend exploded" in text


def test_a_sub_second_failure_never_leads_over_seconds_of_recompiles() -> None:
    """The issue's audio model: 410 ms of failures led over 7 s of recompiles."""
    failed = frame("0/0", name="broken", status="failed", fail_type="Unsupported", fail_reason="x", compile_time_s=0.4)
    entries = [frame(f"1/{i}", start_s=1.0 + i, compile_time_s=0.9, recompile_reason="___check_type_id(self._modules"
                     "['conv'], 1), type=<class 'torch.nn.utils.parametrize.ParametrizedConv1d'>" if i else None)
               for i in range(9)]
    found = findings(make_session([failed, *entries]))
    assert found[0].key == "recompiles" and found[0].cause == "parametrization"
    assert [f.key for f in found].index("failures") > 0


def test_an_in_process_session_says_so_instead_of_an_exit_status() -> None:
    from dynaprof import fmt

    assert fmt.run_outcome("exited", None) == "profiled in-process"
    assert fmt.run_outcome("exception", None) == "profiled in-process (the block raised)"
    assert fmt.run_outcome("exited", 0) == "exited 0" and fmt.run_outcome("signal", 143) == "signal (status 143)"
    assert fmt.exit_fact("exited", None) == "profiled in-process" and fmt.exit_fact("exited", 1) == "exited, status 1"


def test_remedies_are_named_where_one_was_measured() -> None:
    from dynaprof.analysis.remedies import REMEDY_DYNAMIC, REMEDY_FOLD

    (top, *_rest) = findings(seed_session())
    assert top.key == "cause:parametrization" and top.remedy == REMEDY_FOLD
    frames = [frame("0/0", start_s=0.0), frame("0/1", start_s=2.0, recompile_reason="tensor 'x' size mismatch")]
    assert {x.key: x for x in findings(make_session(frames))}["recompiles"].remedy == REMEDY_DYNAMIC
    dtype_only = [frame("0/0", start_s=0.0), frame("0/1", start_s=2.0, recompile_reason="dtype mismatch")]
    assert {x.key: x for x in findings(make_session(dtype_only))}["recompiles"].remedy is None
    br = GraphBreak("Failed to trace builtin operator Explanation: print Hint: Avoid calling print here. Hint: other",
                    "/work/step.py", 17)
    found = {x.key: x for x in findings(make_session([frame("0/0", graph_breaks=1, graph_break_reasons=[br])]))}
    assert found["graph_breaks"].remedy == "graph break at step.py:17: Avoid calling print here. (torch's hint)"
    assert all(x.remedy is None for x in findings(seed_session(False)))


def test_the_remedy_follows_the_verdict_in_the_summaries() -> None:
    from dynaprof.analysis.remedies import REMEDY_FOLD
    from dynaprof.render.terminal import summary_text

    text = summary_text(seed_session(), 25, width=1000)  # unwrapped: one line per sentence
    verdict = text.index("  hottest: parametrization")
    assert text[verdict:].splitlines()[1] == f"    try: {REMEDY_FOLD}"


def test_compiles_failing_inside_parametrize_say_a_parametrization_is_registered_inside_forward() -> None:
    from dynaprof.analysis.remedies import REMEDY_REGISTER_OUTSIDE

    bad = frame("0/0", status="failed", fail_type="Unsupported", fail_reason="Unsupported function call",
                fail_filename="/venv/lib/python3.11/site-packages/torch/nn/utils/parametrize.py", fail_lineno=92)
    (top, *_rest) = findings(make_session([bad]))
    assert top.key == "failures" and "first: forward (repro.py:11)" in top.text and "runs eagerly" in top.text
    assert "a parametrization registered or removed inside the compiled code" in top.text
    assert top.remedy == REMEDY_REGISTER_OUTSIDE
    other = frame("0/0", status="failed", fail_type="Unsupported", fail_reason="x", fail_filename="/work/m.py",
                  fail_lineno=3)
    (top, *_rest) = findings(make_session([other]))
    assert "at m.py:3" in top.text and top.remedy is None


def test_restart_reasons_read_as_words_with_the_line_that_raised_them() -> None:
    from dynaprof.analysis.findings import reason_words

    assert reason_words("<class 'torch._dynamo.exc.UnspecializeRestartAnalysis'>") == (
        "Dynamo stopped specializing on a value it had treated as a constant (UnspecializeRestartAnalysis)")
    assert reason_words("Call to `torch._dynamo.graph_break()`\n  Explanation: User-inserted graph break. "
                        "Message: None\n  Hint: Remove the graph_break() call") == (
        "Call to `torch._dynamo.graph_break()`: User-inserted graph break.")
    f = frame("0/0", restarts=1, restart_reasons=["<class 'torch._dynamo.exc.SpeculationRestartAnalysis'>"],
              attempts=[Attempt(0, 1.0, 0.4), Attempt(1, 1.4, 0.6)],
              graph_break_reasons=[GraphBreak("graph_break()", "/work/helper.py", 20)])
    # the break and the restart it caused are one finding, at their site (issue: one root cause)
    (text,) = [x.text for x in findings(make_session([f])) if x.key.startswith("site:")]
    assert "restarts: Dynamo hit a graph break it could not resume from mid-inline" in text
    assert "1 graph break and 1 restart at helper.py:20" in text


def test_a_specific_finding_leads_a_category_total() -> None:
    """"guard building took 2.5 s" sums the whole graph's guards; "forward was recompiled 2 times,
    2.0 s" is one thing to change: when it is a fifth of compile or more, it leads."""
    from dynaprof.model import Stack
    from tests.factories import SP, FunctionTable

    t = FunctionTable()
    guards = [t("_compile", SP + "torch/_dynamo/convert_frame.py", 1), t("build", SP + "torch/_dynamo/guards.py", 2)]
    frames = [frame(f"0/{i}", start_s=2.0 * i, compile_time_s=1.0,
                    recompile_reason="tensor 'x' dispatch key set mismatch" if i else None) for i in range(3)]
    stacks = [Stack(f"0/{i}", 0, 1, guards, [], 830, 0.83) for i in range(3)]
    s = make_session(frames, stacks, t.functions)
    keys = [f.key for f in findings(s)]
    assert keys.index("recompiles") < keys.index("category:guard_building")
    assert hottest(s).startswith("recompiles: forward (repro.py:11) was recompiled 2 times, 2.00 s (67% of compile)")
    # a recompile of a tenth of compile still leads: a total sums many causes, no one thing to remove
    ten = [frame("0/0", compile_time_s=9.0), frame("0/1", start_s=10.0, compile_time_s=1.0)]
    s2 = make_session(ten, [Stack("0/0", 0, 1, guards, [], 8000, 8.0)], t.functions)
    assert hottest(s2).startswith("recompiles: forward")
    # one under 5% of compile (ACTIONABLE_SHARE) leaves the bigger total first
    tiny = [frame("0/0", compile_time_s=30.0), frame("0/1", start_s=31.0, compile_time_s=1.0)]
    s3 = make_session(tiny, [Stack("0/0", 0, 1, guards, [], 30000, 30.0)], t.functions)
    assert hottest(s3).startswith("guard building took")


def test_the_verdict_sentence_stays_within_its_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict drops its smaller phases to stay one short sentence (200 characters), never the
    cause, its seconds or its share."""
    from dynaprof.analysis import findings as fnd
    from dynaprof.analysis.attribution import apply_attribution
    from tests.factories import inductor_session

    s = inductor_session(param_cause="ConvTranspose1d.weight via _WeightNorm")
    apply_attribution(s)
    full = hottest(s)
    assert fnd.VERDICT_CHARS == 200 and len(full) <= 200
    assert full.count(" s ") >= 4  # the cause's seconds and three phases
    monkeypatch.setattr(fnd, "VERDICT_CHARS", 130)
    short = hottest(s)
    assert len(short) <= 130 and short.startswith(full.split(":")[0])  # the same cause, seconds and share
    assert "8.00 s C++/Triton kernel compile" in short and "Inductor lowering" not in short


def test_the_verdict_from_findings_already_worked_out_is_the_same_verdict() -> None:
    for s in (seed_session(), seed_session(False), make_session([]), make_session([frame(compile_time_s=0.0)])):
        found = findings(s)
        assert hottest(s, found) == hottest(s)
    assert hottest(seed_session(), []) == "nothing stands out"  # it reads what it is given


def test_a_fused_kernels_part_does_not_nest_in_the_verdicts_via_list() -> None:
    """A fused kernel's part is labelled ``... via _WeightNorm, fused with forward (...)``: the
    verdict names the parametrization class once, never the code it was fused with."""
    from dynaprof.analysis.attribution import apply_attribution
    from dynaprof.model.cause_labels import via_classes
    from tests.factories import inductor_session

    assert via_classes("A.w, B.w via X, Y, fused with forward (m.py:9) and 1 more") == ["X", "Y"]
    assert via_classes("forward (m.py:9)") == []
    s = inductor_session(param_cause="Conv1d.weight via _WeightNorm, fused with forward (m.py:9)")
    apply_attribution(s)
    verdict = hottest(s)
    assert "_WeightNorm)" in verdict and "fused with" not in verdict and len(verdict) <= 200


def test_the_counterfactual_run_is_compared_apart_from_toolchain_setup_and_always_said() -> None:
    from dynaprof.model.session import Counterfactual

    s = seed_session()
    assert not [f for f in findings(s) if f.key == "counterfactual"]  # no second run, nothing said
    s.counterfactual = Counterfactual(["Linear.weight via _WeightNorm"] * 3, 1.5, 13, 0, extra_kernels=2,
                                      extra_kernel_s=1.2, kernels_here=17, toolchain_s=None)
    (f,) = [f for f in findings(s) if f.key == "counterfactual"]
    assert "with its 3 parametrizations folded" in f.text and "1.50 s against" in f.text
    assert "13 Inductor kernels against 17" in f.text and "2 kernels that fuse" in f.text
    assert "without the one-time toolchain setup" not in f.text  # the folded run's is unknown here
    assert f.seconds == 0.0  # a comparison beside the causes, never the verdict
    s.counterfactual.kernels_here = None  # a session written before it was counted
    (f,) = [f for f in findings(s) if f.key == "counterfactual"]
    assert "against 17" not in f.text and "Inductor kernels" not in f.text


def test_the_replay_is_said_beside_the_counterfactual_run_and_silences_the_fused_kernel_caveat() -> None:
    from dynaprof.analysis.attribution import apply_attribution
    from dynaprof.model.session import Counterfactual, Replay
    from tests.factories import inductor_session

    s = inductor_session(param_cause="Conv1d.weight via _WeightNorm, fused with forward (m.py:9)")
    for f in s.frames:
        f.fused_kernels, f.fused_kernel_s = 2, 3.0
    apply_attribution(s)
    assert [f.key for f in findings(s) if f.key in ("fused_kernels", "replay")] == ["fused_kernels"]
    s.replay = Replay(1, 13, extra_kernels=4, extra_kernel_s=2.5, spared_kernels=1, spared_kernel_s=0.6, seconds=7.0)
    keys = [f.key for f in findings(s)]
    assert "fused_kernels" not in keys and "replay" in keys  # it saw what the caveat says it cannot
    (r,) = [f for f in findings(s) if f.key == "replay"]
    assert "4 kernels of this run exist only because of it (2.50 s to build)" in r.text
    assert "define 1 kernel this run did not" in r.text and "7.00 s" in r.text and r.seconds == 0.0
    assert "--counterfactual" not in r.text
    s.counterfactual = Counterfactual(["Conv1d.weight via _WeightNorm"], 1.5, 13, 0, extra_kernels=3)
    (r,) = [f for f in findings(s) if f.key == "replay"]
    assert "counted 3 such kernels" in r.text and "measured between the two runs" in r.text
    assert not hottest(s).startswith(("mixed:", "Inductor replay"))


PARAM_SITE = ("/venv/lib/python3.11/site-packages/torch/nn/utils/parametrize.py", 92)
PEFT = ("/venv/lib/python3.11/site-packages/peft/tuners/lora/layer.py", 1234)


def _peft_like(n: int = 4) -> list:
    """peft's target_parameters: a parametrization registered inside forward, on every call. Each
    frame breaks and restarts at parametrize.py:92; most of them then fail there."""
    frames = []
    for i in range(n):
        brk = GraphBreak("register_parametrization inside the compiled code", *PARAM_SITE, *PEFT)
        frames.append(frame(
            f"{i}/0", name=f"forward{i}", filename=PEFT[0], lineno=PEFT[1] + i, start_s=2.0 * i, compile_time_s=1.0,
            graph_breaks=1, graph_break_reasons=[brk], restarts=1, restart_reasons=["graph break"],
            attempts=[Attempt(0, 2.0 * i, 0.6), Attempt(1, 2.0 * i + 0.6, 0.4)],
            status="failed" if i < n - 1 else "ok", fail_type="Unsupported",
            fail_reason="register_parametrization", fail_filename=PARAM_SITE[0] if i < n - 1 else None,
            fail_lineno=PARAM_SITE[1] if i < n - 1 else None))
    return frames


def test_breaks_restarts_and_failures_at_one_site_are_one_finding_with_their_union() -> None:
    """Issue: one root cause, one finding. Three findings once shared these frames (their shares
    summed past 100%); now one, its seconds each frame once, named by the cause that owns the site."""
    s = make_session([*_peft_like(), frame("9/0", name="other", start_s=20.0, compile_time_s=1.0)])
    found = findings(s)
    keys = [f.key for f in found]
    assert not {"graph_breaks", "restarts", "failures"} & set(keys), keys
    (site,) = [f for f in found if f.key.startswith("site:")]
    # three failed frames whole (3 s) and the fourth's thrown-away attempt (0.6 s)
    assert site.seconds == pytest.approx(3.6)
    assert site.text.startswith("parametrization registered inside the compiled code: 4 graph breaks, 4 restarts "
                                "and 3 failed compiles at torch/nn/utils/parametrize.py:92, reached from "
                                "peft/tuners/lora/layer.py:1234")
    assert site.remedy is not None and "outside the compiled forward" in site.remedy
    total = s.total_compile_s
    shares = sum(f.seconds for f in found if not f.key.startswith(("category:", "slowest_frame")))
    assert shares <= total + 1e-9


def test_a_restart_finding_is_never_named_after_the_collector() -> None:
    from dynaprof.analysis.attribution import apply_attribution
    from dynaprof.model.session import CAUSE_COLLECTOR

    f = frame("0/0", restarts=1, restart_reasons=["graph break"], compile_time_s=1.0,
              graph_break_reasons=[GraphBreak("print")],
              attempts=[Attempt(0, 0.0, 0.6), Attempt(1, 0.6, 0.4)])
    s = seed_session()  # its samples and function table, with this frame
    s.frames = [f]
    apply_attribution(s)
    assert s.axes is not None
    s.axes.restart_waste.by_cause = {CAUSE_COLLECTOR: 0.5, "forward (model.py:7)": 0.1}
    (r,) = [x for x in findings(s) if x.key == "restarts"]
    assert not r.text.startswith(CAUSE_COLLECTOR) and r.cause != CAUSE_COLLECTOR
    assert r.text.startswith("forward (model.py:7): 1 restart")


def test_findings_that_add_past_the_compile_are_said_to_overlap_once() -> None:
    from dynaprof.analysis.findings import Finding, overlap_note

    a, b = Finding("cause:parametrization", 0.7, "a"), Finding("site:x.py:1", 0.6, "b")
    assert overlap_note([a], 1.0) is None and overlap_note([a, Finding("replay", 0.0, "r")], 1.0) is None
    note = overlap_note([a, b], 1.0)
    assert note is not None and note.startswith("these findings overlap (together 130% of compile)")
    assert overlap_note([a, Finding("category:aot", 0.6, "c")], 1.0) is None  # a fact names no seconds to save


def test_a_kind_with_events_elsewhere_keeps_a_finding_for_those_only() -> None:
    other = frame("8/0", name="helper", filename="/u/model.py", lineno=40, start_s=30.0, compile_time_s=2.0,
                  graph_breaks=1, graph_break_reasons=[GraphBreak("print", "/u/model.py", 41)])
    resumed = frame("8/1", name="torch_dynamo_resume_in_helper_at_41", filename="/u/model.py", lineno=41,
                    start_s=33.0, compile_time_s=0.5)
    found = {f.key: f for f in findings(make_session([*_peft_like(), other, resumed]))}
    site = next(f for k, f in found.items() if k.startswith("site:"))
    assert "4 graph breaks" in site.text and "parametrize.py:92" in site.text
    # the other break is said on its own, and the site's four are not said again
    gb = found["graph_breaks"]
    assert gb.text.startswith("graph breaks: 1 graph break at model.py:41"), gb.text
    assert gb.seconds == 0.5  # the code resumed after it, compiled as a frame of its own
    assert "restarts" not in found and "failures" not in found


def test_every_site_with_two_kinds_is_one_finding_not_only_the_costliest() -> None:
    """A second site where a break and its restart were raised (a ``print`` in the user's helper)
    is its own merged finding too: no graph-break or restart finding says those events again."""
    helper = [frame(f"8/{i}", name="helper", filename="/u/model.py", lineno=40, start_s=30.0 + i,
                    compile_time_s=0.5, graph_breaks=1, graph_break_reasons=[GraphBreak("print", "/u/model.py", 41)],
                    restarts=1, restart_reasons=["graph break"],
                    attempts=[Attempt(0, 30.0 + i, 0.3), Attempt(1, 30.3 + i, 0.2)]) for i in range(2)]
    found = findings(make_session([*_peft_like(), *helper]))
    sites = [f for f in found if f.key.startswith("site:")]
    assert [f.key for f in sites] == ["site:torch/nn/utils/parametrize.py:92", "site:model.py:41"]
    assert sites[1].seconds == pytest.approx(0.6) and "2 graph breaks and 2 restarts at model.py:41" in sites[1].text
    assert not {"graph_breaks", "restarts", "failures"} & {f.key for f in found}
