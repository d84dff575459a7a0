"""The first screen a user reads: the verdict's rank and length, recompile causes, readable names.

Hand-built sessions only (no torch.compile): the real models behind these rules are in
benchmarks/bench_first_screen.py (figures in docs/reports.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dynaprof import fmt
from dynaprof.analysis.findings import VERDICT_CHARS, findings, hottest
from dynaprof.analysis.recompile_causes import PER_INSTANCE_CLASS, SIZES, recompile_cause
from dynaprof.model.code_names import code_label, code_name, resumed_function
from dynaprof.model.session import CAUSE_PARAMETRIZATION
from dynaprof.render.terminal import summary_text
from tests.factories import frame, inductor_session, make_session
from tests.helpers import read_table

#: torch 2.13's recompile reason on the issue's weight-norm model (one per parametrized instance)
TYPE_GUARD = ("___check_type_id(self._modules['conv'], 94741462317168), type=<class "
              "'torch.nn.utils.parametrize.ParametrizedConv1d'>  # return torch.relu(self.conv(x))  "
              "# mp/w/pconv.py:9 in forward (HINT: type ParametrizedConv1d)\nUser stack trace:\n"
              '  File "/tmp/w/pconv.py", line 9, in forward')


def test_a_parametrized_class_type_guard_is_the_parametrizations() -> None:
    cause = recompile_cause(TYPE_GUARD)
    assert cause is not None and cause.cause == CAUSE_PARAMETRIZATION
    assert cause.why == PER_INSTANCE_CLASS and cause.cls == "ParametrizedConv1d"


def test_a_guard_on_a_parametrizations_tensors_is_the_parametrizations() -> None:
    reason = ("tensor 'L['self']._modules['lin']._modules['parametrizations']._modules['weight']."
              "_parameters['original0']' requires_grad mismatch. expected requires_grad=1")
    cause = recompile_cause(reason)
    assert cause is not None and cause.cause == CAUSE_PARAMETRIZATION and cause.cls is None


@pytest.mark.parametrize(("reason", "why"), [
    ("tensor 'L['x']' size mismatch at index 0. expected 8, actual 16", "x changed size in dimension 0"),
    ("tensor 'x' size mismatch", "x changed size"),
    ("tensor 'L['y']' stride mismatch at index 1. expected 1, actual 2", "y changed stride in dimension 1"),
])
def test_a_size_guard_names_the_tensor_and_its_dimension(reason: str, why: str) -> None:
    cause = recompile_cause(reason)
    assert cause is not None and cause.cause == SIZES and cause.why == why


@pytest.mark.parametrize("reason", [None, "", "___check_obj_id(L['fn'], 1234)",
                                    "tensor 'x' dispatch key set mismatch"])
def test_an_unknown_guard_has_no_cause(reason: str | None) -> None:
    assert recompile_cause(reason) is None


def _recompiled_session(reason: str, n: int = 9, failed_s: float = 0.41) -> list:
    failed = frame("0/0", name="broken", status="failed", fail_type="Unsupported",
                   fail_reason="Failed to trace builtin operator", compile_time_s=failed_s)
    entries = [frame(f"1/{i}", name="torch_dynamo_resume_in_forward_at_162",
                     filename="/site-packages/transformers/models/encodec/modeling_encodec.py", lineno=162,
                     start_s=1.0 + i, compile_time_s=0.8, recompile_reason=reason if i else None,
                     recompile_limit_hit="recompile_limit" if i == n - 1 else None)
               for i in range(n)]
    return [failed, *entries]


def test_parametrization_recompiles_lead_a_sub_second_failure_and_say_why() -> None:
    found = findings(make_session(_recompiled_session(TYPE_GUARD)))
    top = found[0]
    assert top.key == "recompiles" and top.cause == CAUSE_PARAMETRIZATION
    assert top.text.startswith("parametrization: forward after the graph break (modeling_encodec.py:162)")
    assert PER_INSTANCE_CLASS in top.text and "recompiled 8 times" in top.text
    # one function, one finding: its recompiles and the limit they reached
    assert "recompiled 8 times (limit hit)" in top.text or "recompiled 8 times up to its recompile limit" in top.text
    assert not [f for f in found if f.key == "recompile_limit"]
    assert top.remedy is not None and "remove_parametrizations" in top.remedy
    failures = next(f for f in found if f.key == "failures")
    assert failures.seconds == pytest.approx(0.41) and "runs eagerly" in failures.text


def test_a_sub_second_finding_never_leads_over_ten_times_more() -> None:
    """The rule of docs/attribution.md: every rank is seconds, none inflated."""
    for reason in (TYPE_GUARD, "tensor 'x' size mismatch at index 0", "___check_obj_id(L['fn'], 1)"):
        found = findings(make_session(_recompiled_session(reason)))
        small = [f for f in found if f.seconds < 1.0]
        big = max(f.seconds for f in found)
        assert all(found.index(f) > 0 for f in small if 10 * f.seconds <= big)


def test_the_ranking_rule_is_documented_for_every_finding() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "attribution.md").read_text()
    table = doc[doc.index("## The verdict"):doc.index("## Exact, not sampled")]
    sessions = [make_session(_recompiled_session(TYPE_GUARD)), inductor_session()]
    keys = {f.key.split(":")[0] for s in sessions for f in findings(s)}
    for key in keys - {"category", "slowest_frame", "backward", "no_provenance", "fused_kernels"}:
        assert f"`{key}" in table, key


LONG = "a_rather_long_function_name_that_a_generated_model_might_have_"


def _long_named_session() -> list:
    frames = []
    for i, tail in enumerate(("encoder_block", "decoder_block")):
        frames += [frame(f"{i}/{k}", name=LONG + tail, start_s=float(i * 10 + k),
                         filename=f"/site-packages/transformers/models/{tail}/modeling_{tail}_with_long_name.py",
                         lineno=100 + i, compile_time_s=0.5 + k,
                         recompile_reason=TYPE_GUARD if k else None) for k in range(3)]
    return frames


@pytest.mark.parametrize("width", [40, 80, 100])
def test_no_name_is_cut_to_an_ellipsis_at_any_width(width: int) -> None:
    s = make_session(_long_named_session())
    text = summary_text(s, width=width)
    table = text[:text.index("  total:")]
    assert "..." not in table
    # a name too long for its column wraps inside it: read back, every row's name is whole
    names = [re.sub(r"\s+", "", r[1]) for r in read_table(table.splitlines(), "id", wrap=1)[1:]]
    for tail in ("encoder_block", "decoder_block"):
        assert any(n.startswith(re.sub(r"\s+", "", f"{LONG}{tail}(modeling_{tail}_with_long_name.py:")) for n in names)
    cause = summary_text(inductor_session(user_cause=LONG + "encoder (model.py:26)"), width=width)
    rows = read_table(cause.splitlines(), "cause")
    assert re.sub(r"\s+", "", LONG + "encoder (model.py:26)") in [re.sub(r"\s+", "", r[0]) for r in rows]
    if width >= 80:  # at 40 the numbers alone are wider: only the names give way
        assert all(len(line) <= width for line in table.splitlines()), table


@pytest.mark.parametrize("text", ["_pad1d (modeling_encodec.py:138)", "a b_c/d.e f_g h/i", "x" * 40,
                                  "  Linear.weight via Parametrization"])
def test_a_wrapped_cell_never_passes_its_width_and_keeps_every_character(text: str) -> None:
    for width in range(4, 45):
        parts = fmt.wrap_cell(text, width)
        assert all(len(p) <= width for p in parts), (width, parts)
        assert "".join(parts).replace(" ", "") == text.replace(" ", "")


def test_the_hottest_sentence_fits_200_characters_with_long_names() -> None:
    for s in (make_session(_long_named_session()), make_session(_recompiled_session(TYPE_GUARD)),
              inductor_session(user_cause=LONG * 2 + " (model.py:26)",
                               param_cause="Linear.weight via " + LONG + "Parametrization")):
        verdict = hottest(s)
        assert len(verdict) <= VERDICT_CHARS, verdict
        assert "..." not in verdict


def test_a_resume_function_reads_as_what_it_resumes() -> None:
    assert resumed_function("torch_dynamo_resume_in_forward_at_162") == ("forward", 162)
    assert resumed_function("torch_dynamo_resume_in_my_fn_at_3") == ("my_fn", 3)
    nested = "torch_dynamo_resume_in_torch_dynamo_resume_in_forward_at_10_at_20"
    assert resumed_function(nested) == ("forward", 20)
    assert resumed_function("forward") is None and code_name("forward") == "forward"
    # a traced method carries its class (EnCodec's convolutions)
    resume = "EncodecConv1d.torch_dynamo_resume_in__pad1d_at_150"
    assert code_name(resume) == "EncodecConv1d._pad1d after the graph break"
    assert code_label("torch_dynamo_resume_in_forward_at_162", "/x/modeling_x.py", 162) == \
        "forward after the graph break (modeling_x.py:162)"


def test_a_long_cell_wraps_inside_its_column_with_its_numbers_on_its_first_line() -> None:
    rows = [["0/0", "forward (model.py:16)", "1.00 s"],
            ["0/1", "forward after the graph break (modeling_encodec.py:162)", "2.00 s"],
            ["0/2", "  Linear.weight via a parametrization with a long name, longer than forty", "3.00 s"]]
    lines = fmt.table(["id", "frame", "time"], rows, "llr", width=40, wrap=1)
    assert all(len(line) <= 40 for line in lines)
    assert lines[1].startswith("0/0  forward (model.py:16)") and lines[1].endswith("1.00 s")
    # too long for its column: the row's numbers on its first line, beside the name's start; the
    # name goes on below, in its own column only (the way rich wraps)
    second = next(i for i, line in enumerate(lines) if line.startswith("0/1"))
    assert lines[second].endswith("2.00 s") and lines[second + 1].startswith("     ") and lines[second + 1][-1] != "s"
    back = read_table(lines, "id", wrap=1)
    assert [r[2] for r in back[1:]] == ["1.00 s", "2.00 s", "3.00 s"]
    assert [r[1].replace(" ", "") for r in back[1:]] == [c[1].replace(" ", "") for c in rows]
