"""dynaprof compare: frame matching, exact deltas, the headline, reports and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynaprof.analysis.compare import Change, compare_sessions, frame_key, match_frames
from dynaprof.cli import main
from dynaprof.model import PropertyTrace, Session, Stack, save_session
from dynaprof.render.compare_report import render_compare
from tests.factories import DYN, SP, FunctionTable, frame, make_session, seed_session
from tests.helpers import assert_self_contained, assert_tables_well_formed

# the change by cause first (with its phases), then by phase (the attribution categories)
SEED_HEADLINE = ("compile time 0.30 s -> 1.20 s (+0.90 s, 4.0x); +0.84 s parametrization (93% of the growth): "
                 "+0.84 s Dynamo tracing; by phase: +0.81 s Dynamo tracing "
                 "(90% of the growth); guards 417 -> 2,639 (6.3x)")


def _sessions() -> tuple[Session, Session]:
    """BASE: f@a.py:1 twice (a recompile), g@b.py:5; NEW: f twice, h@c.py:9 (g gone, h new)."""
    t = FunctionTable()
    guards = t("CheckFunctionManager.__init__", DYN + "guards.py", 1)
    trace = t("InstructionTranslatorBase.run", DYN + "symbolic_convert.py", 1)
    prop = PropertyTrace("L.weight", "L", "weight", SP + "torch/nn/utils/parametrize.py", 1, True, 4, 2, 0.25)
    base = make_session([
        frame("0/0", name="f", filename="/base/a.py", lineno=1, start_s=0.0, compile_time_s=1.0, guard_count=100,
              inlined_calls=10, restarts=0),
        frame("1/0", name="g", filename="/base/b.py", lineno=5, start_s=2.0, compile_time_s=0.5, guard_count=20),
        frame("0/1", name="f", filename="/base/a.py", lineno=1, start_s=3.0, compile_time_s=0.25, guard_count=50,
              graph_breaks=1),
    ], [Stack("0/0", 0, 1, [guards], [], 1, 0.2), Stack("0/0", 0, 1, [trace], [], 1, 0.6)], t.functions)
    new = make_session([
        frame("0/0", name="f", filename="/new/a.py", lineno=1, start_s=0.0, compile_time_s=2.0, guard_count=400,
              inlined_calls=30, restarts=1, properties=[prop]),
        frame("0/1", name="f", filename="/new/a.py", lineno=1, start_s=3.0, compile_time_s=0.5, guard_count=60),
        frame("2/0", name="h", filename="/new/c.py", lineno=9, start_s=4.0, compile_time_s=0.25, guard_count=5),
    ], [Stack("0/0", 0, 1, [guards], [], 1, 0.5), Stack("0/0", 1, 1, [trace], [], 1, 1.5)], t.functions)
    return base, new


def test_matching_by_location_and_occurrence() -> None:
    base, new = _sessions()
    pairs, only_base, only_new = match_frames(base.frames, new.frames)
    assert [(k, i, b.compile_id, n.compile_id) for k, i, b, n in pairs] == [
        (("a.py", "f", 1), 0, "0/0", "0/0"), (("a.py", "f", 1), 1, "0/1", "0/1")]
    assert [f.name for f in only_base] == ["g"] and [f.name for f in only_new] == ["h"]
    assert frame_key(new.frames[0]) == ("a.py", "f", 1)  # basename: different folders still match


def test_exact_deltas() -> None:
    base, new = _sessions()
    cmp = compare_sessions(base, new)
    t = cmp.totals
    assert t["compile_s"] == Change(1.75, 2.75) and t["compile_s"].delta == pytest.approx(1.0)
    assert t["guards"] == Change(170.0, 465.0)
    assert t["restarts"] == Change(0.0, 1.0)
    assert t["graph_breaks"] == Change(1.0, 0.0)
    assert t["inlined_calls"] == Change(10.0, 30.0)  # frames with unknown counts are left out
    assert t["parametrization_s"] == Change(0.0, 0.25)
    assert t["frames"] == Change(3.0, 3.0) and not t["frames"].changed
    # NEW's guard samples are in a discarded attempt: still guard building (the waste is in the cause view)
    assert cmp.categories["guard_building"] == Change(0.2, 0.5)
    assert "restarts" not in cmp.categories and "parametrization" not in cmp.categories
    assert cmp.categories["dynamo_tracing"] == Change(0.6, 1.5)
    first = cmp.pairs[0]
    assert first.metrics["compile_s"] == Change(1.0, 2.0)
    assert first.metrics["guards"] == Change(100.0, 400.0)
    assert first.metrics["inlined_calls"] == Change(10.0, 30.0)
    assert first.metrics["restarts"].delta == 1.0
    assert first.metrics["parametrization_s"] == Change(0.0, 0.25)
    assert cmp.pairs[1].metrics["graph_breaks"] == Change(1.0, 0.0)
    assert cmp.headline == ("compile time 1.75 s -> 2.75 s (+1.00 s, 1.6x); +1.20 s whole graph (120% of the growth): "
                            "+0.90 s Dynamo tracing, +0.30 s guard building; by phase: +0.90 s Dynamo tracing "
                            "(90% of the growth); guards 170 -> 465 (2.7x); restarts 0 -> 1 (+1); graph breaks 1 -> 0 "
                            "(-1); 1 frame only in BASE, 1 only in NEW")


def test_normalized_shares() -> None:
    base, new = _sessions()
    cmp = compare_sessions(base, new, normalize=True)
    assert cmp.categories["guard_building"].new == pytest.approx(0.5 / 2.75)
    assert cmp.categories["dynamo_tracing"].base == pytest.approx(0.6 / 1.75)
    assert cmp.pairs[0].metrics["compile_s"].base == pytest.approx(1.0 / 1.75)
    assert cmp.totals["compile_s"] == Change(1.75, 2.75)  # the normalizer stays in seconds
    assert cmp.totals["guards"] == Change(170.0, 465.0)  # counts are not normalized
    assert "by phase: Dynamo tracing 34% -> 55% of compile (+20 pts)" in cmp.headline


def test_seed_story() -> None:
    cmp = compare_sessions(seed_session(False), seed_session(True))
    assert cmp.headline == SEED_HEADLINE
    assert compare_sessions(seed_session(True), seed_session(True)).headline == "compile time 1.20 s (no change)"
    back = compare_sessions(seed_session(True), seed_session(False)).headline
    assert "-0.84 s parametrization (93% of the reduction)" in back and "by phase: -0.81 s Dynamo tracing" in back


def test_reports() -> None:
    base, new = seed_session(False), seed_session(True)
    files = render_compare(compare_sessions(base, new), base, new, names=("plain", "param"))
    assert set(files) >= {"compare.md", "compare.html"}
    md = files["compare.md"]
    assert isinstance(md, str)
    assert "(93% of the growth)" in md and "→" in md
    assert "| guards | 417 | 2,639 | 6.3x |" in md
    assert "| parametrization | 0.00 s | 0.84 s | +0.84 s, new |" in md  # by cause
    # exact work counts: the difference itself, never a ratio or a noise verdict
    assert "| bytecode instructions traced (incl. inlined) | 299 | 5,483 | +5,184 |" in md
    assert ("| forward (repro.py:11) | 0/0 | 299 → 5,483 (+5,184) | 34 → 546 (+512) | ? | ? | ? | ? | ? | ? "
            "| 417 → 2,639 (+2,222) | 0 |") in md  # eager: no Inductor counts, no cProfile
    assert_tables_well_formed(md, 6)
    html = files["compare.html"]
    assert isinstance(html, str)
    assert_self_contained(html)
    assert "diff-compiler.svg" in files and "diff-traced.svg" in files
    assert html.count('class="dynaprof-flame"') == 2 and "(diff-compiler.svg)" in md


def test_hostile_names_in_reports() -> None:
    evil = "<img src=x onerror=alert(1)>|`x`"
    base = make_session([frame("0/0", name=evil, filename="/w/<e>.py")])
    new = make_session([frame("0/0", name=evil, filename="/w/<e>.py", compile_time_s=2.0), frame("1/0", name=evil)])
    files = render_compare(compare_sessions(base, new), base, new, names=(evil, evil))
    for text in (files["compare.md"], files["compare.html"]):
        assert isinstance(text, str) and "<img" not in text
    assert_tables_well_formed(str(files["compare.md"]), 4)


def test_cli_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    save_session(seed_session(False), tmp_path / "plain")
    save_session(seed_session(True), tmp_path / "param")
    assert main(["compare", "plain", "param/session.json"]) == 0
    err = capsys.readouterr().err
    assert SEED_HEADLINE in err and "dynaprof-compare/plain-vs-param" in err
    out = tmp_path / "dynaprof-compare" / "plain-vs-param"
    assert (out / "compare.md").is_file() and (out / "compare.html").is_file()
    assert main(["compare", "plain", "param"]) == 0  # default folder taken: a new one
    assert (tmp_path / "dynaprof-compare" / "plain-vs-param-2" / "compare.md").is_file()
    assert main(["compare", "plain", "param", "-o", str(out)]) == 2  # not empty
    assert "not empty" in capsys.readouterr().err
    assert main(["compare", "plain", "param", "-o", str(out), "--force", "--normalize"]) == 0
    assert "normalized" in capsys.readouterr().err
    assert main(["compare", "plain", "missing"]) == 2
    assert "missing" in capsys.readouterr().err


def test_inductor_work_counts_are_exact_differences() -> None:
    """What AOT autograd handed Inductor and what Inductor made of it: compared as exact counts."""
    base, new = seed_session(False), seed_session(True)
    for s, (ops, ir, kernels) in ((base, (40, 12, 3)), (new, (104, 40, 5))):
        s.frames[0].aot_graph_ops, s.frames[0].inductor_ir_nodes, s.frames[0].inductor_kernels = ops, ir, kernels
    cmp = compare_sessions(base, new)
    assert cmp.totals["kernels"] == Change(3.0, 5.0) and cmp.totals["aot_ops"] == Change(40.0, 104.0)
    md = str(render_compare(cmp, base, new, names=("plain", "param"))["compare.md"])
    assert "| kernels generated | 3 | 5 | +2 |" in md and "| Inductor IR nodes | 12 | 40 | +28 |" in md
    assert "| 40 → 104 (+64) | 12 → 40 (+28) | 3 → 5 (+2) |" in md
    eager = compare_sessions(seed_session(False), seed_session(True))
    assert eager.totals["kernels"] == Change(None, None)  # unknown without Inductor, never 0
