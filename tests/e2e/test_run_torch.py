"""End to end: `dynaprof run` on the samples with real torch (eager backend, CPU)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dynaprof.analysis.findings import findings
from dynaprof.capture.hooks.parametrized_calls import GUARDS_UNKNOWN
from dynaprof.capture.own_code import own_file
from dynaprof.model import load_session
from dynaprof.model.session import CompiledFrame, Session
from tests.conftest import SAMPLES, CliResult, profile, run_dynaprof
from tests.helpers import requires_torch, sin_loop, torch_release, torch_version_text, unwrap

pytestmark = [pytest.mark.torch, pytest.mark.versions]


def test_seed_parametrized_has_one_forward_frame_and_many_more_guards(seed_runs: dict[str, CliResult]) -> None:
    p, q = seed_runs["parametrized"], seed_runs["plain"]
    assert p.returncode == 0, p.stderr
    assert q.returncode == 0, q.stderr
    sp, sq = load_session(p.run_dir), load_session(q.run_dir)
    assert [f.name for f in sp.frames] == ["forward"]
    assert [f.name for f in sq.frames] == ["forward"]
    fp, fq = sp.frames[0], sq.frames[0]
    assert fp.guard_count is not None and fq.guard_count is not None
    assert fp.guard_count >= 4 * fq.guard_count
    assert fp.compile_id == "0/0" and fp.restarts == 0 and fp.graph_breaks == 0
    assert not fq.properties
    # facts torch exposes are known, not guessed
    assert fp.inlined_calls and fp.inlined_calls > 10 * (fq.inlined_calls or 1)
    assert fp.guards.tree_leaf_count
    # the printed guard code is measured late and only if the script still holds the compiled code
    # (dynaprof never keeps it alive); the seed drops its model when compile_once returns
    assert fp.guards.code_text_chars or any("guard code sizes" in w for w in sp.capture.warnings)
    # the C++ guard tree (each shared guard counted once): larger with the parametrizations
    assert fp.guards.tree_leaf_count > fq.guards.tree_leaf_count  # type: ignore[operator]
    assert fp.guards.tree_manager_count > fq.guards.tree_manager_count  # type: ignore[operator]
    assert fp.compile_time_s and fp.compile_time_s > 0
    assert sp.run.torch_version and sp.run.device == "cpu" and sp.run.exit_status == 0 and sp.run.complete


#: what the seed's own figures need that torch 2.4 lacks
NO_PROPERTIES_24 = ("torch 2.4's Dynamo does not trace a parametrization's @property (it has no "
                    "resolve_data_descriptor, and calls each parametrized module's forward as one op)")


@requires_torch("2.5", NO_PROPERTIES_24 + "; nor phase events, nor an ir_count in its compilation metrics")
def test_seed_properties_phases_and_instructions_are_measured(seed_runs: dict[str, CliResult]) -> None:
    sp = load_session(seed_runs["parametrized"].run_dir)
    fp = sp.frames[0]
    assert fp.ir_count
    # the C++ guard tree: ~1,400 leaf guards vs ~280 on torch 2.13, deeper (torch 2.4: 117 vs 73, as deep)
    fq = load_session(seed_runs["plain"].run_dir).frames[0]
    assert fp.guards.tree_leaf_count >= 3 * fq.guards.tree_leaf_count  # type: ignore[operator]
    assert fp.guards.tree_depth and fq.guards.tree_depth and fp.guards.tree_depth > fq.guards.tree_depth
    # the exact property timers see all 64 parametrized parameters
    assert sum(pr.instances for pr in fp.properties if pr.parametrized) == 64
    assert {pr.label for pr in fp.properties if pr.parametrized} == {"Linear.weight", "Linear.bias"}
    assert "bytecode_tracing" in fp.phases and "build_guards" in fp.phases


@requires_torch("2.5", "torch 2.4 has no phase events or property hook")
def test_seed_on_a_newer_torch_lacks_neither(seed_runs: dict[str, CliResult]) -> None:
    """The reverse of ``test_seed_on_torch_24_lists_what_it_lacks``: nothing is said missing here."""
    warnings = load_session(seed_runs["parametrized"].run_dir).capture.warnings
    assert not any("phases not captured" in w or "properties not captured" in w for w in warnings), warnings
    assert GUARDS_UNKNOWN not in warnings  # the guards' own cause finds them here


def test_seed_on_torch_24_lists_what_it_lacks(seed_runs: dict[str, CliResult]) -> None:
    """On torch 2.4 the facts it cannot give are unknown and the session's warnings say why."""
    if torch_release() >= (2, 5):
        pytest.skip(f"torch {torch_version_text()} has the phase events and the property hook")
    sp = load_session(seed_runs["parametrized"].run_dir)
    warned = " ".join(sp.capture.warnings)
    assert "phases not captured" in warned and "properties not captured" in warned
    assert GUARDS_UNKNOWN in sp.capture.warnings  # its parametrization's guards: unknown, and said
    assert GUARDS_UNKNOWN not in load_session(seed_runs["plain"].run_dir).capture.warnings
    assert "phases" not in sp.capture.hooks and "properties" not in sp.capture.hooks
    fp = sp.frames[0]
    assert fp.phases == {} and fp.properties == []
    # the parametrization is still a cause: 2.4 deep-copies and runs the parametrized modules
    assert _param(sp) > 0


def _param(x: Session | CompiledFrame) -> float:
    """Sampled seconds spent for parametrizations (the cause axis)."""
    return x.axes.causes.get("parametrization", 0.0) if x.axes is not None else 0.0


def test_seed_attribution_names_parametrization(seed_runs: dict[str, CliResult]) -> None:
    sp = load_session(seed_runs["parametrized"].run_dir)
    assert sp.samples is not None and sp.samples.count > 50
    assert sp.axes is not None and max(sp.axes.causes, key=sp.axes.causes.__getitem__) == "parametrization"
    assert _param(sp.frames[0]) > 0
    said = unwrap(seed_runs["parametrized"].stderr)
    if torch_release() >= (2, 5):
        assert "hottest: parametrization (64 properties via Parametrization" in said, said
    else:  # torch 2.4 traces no property: the parametrized classes' inlined calls and deep copies are the cost
        assert "hottest: parametrization cost" in said, said
        assert "parametrized Linear calls (Module._call_impl inlined per class)" in sp.axes.parametrizations
        assert sp.axes.causes["parametrization"] > 0.5 * sum(sp.axes.causes.values()), sp.axes.causes
    sq = load_session(seed_runs["plain"].run_dir)
    assert _param(sq) == 0


def test_no_sampled_stack_holds_dynaprofs_own_frames(seed_runs: dict[str, CliResult]) -> None:
    """The hooks' wrappers (``capture/hooks/``) sit between Dynamo's frames on every inline call and
    property: a flamegraph must show the compiler's stack, not the profiler's."""
    sp = load_session(seed_runs["parametrized"].run_dir)
    assert sp.samples is not None and sp.samples.stacks
    own = {i for i, f in enumerate(sp.functions) if own_file(f.filename)}
    assert not own, [sp.functions[i] for i in sorted(own)][:5]
    # the compiler view still holds torch's inliner under Dynamo's entry, which the wrappers enclosed
    names = {sp.functions[i].name for st in sp.samples.stacks for i in st.compiler}
    assert any(n.endswith("inline_call") for n in names)


@requires_torch("2.5", NO_PROPERTIES_24)
def test_guards_on_a_parametrizations_tensors_are_built_for_it(seed_runs: dict[str, CliResult]) -> None:
    """After tracing, Dynamo builds a guard per original tensor of each parametrization: those
    guards' build is the parametrization's (``hooks/guard_causes``), not the whole graph's."""
    sp, sq = (load_session(seed_runs[k].run_dir) for k in ("parametrized", "plain"))
    assert sp.axes is not None and sq.axes is not None
    assert sp.axes.parametrizations.get("guards on parametrized modules", 0.0) > 0, sp.axes.parametrizations
    assert sp.axes.matrix["guard_building"].get("parametrization", 0.0) > 0
    assert "guard_causes" in sp.capture.hooks
    assert not any(label.startswith("guards on") for label in sq.axes.parametrizations)


def test_summary_lists_frames_totals_finding_and_paths(seed_runs: dict[str, CliResult]) -> None:
    err = unwrap(seed_runs["parametrized"].stderr)
    assert re.search(r"\bid\s+frame\b", err) and "0/0" in err and "forward" in err
    # one frame: its row is the total on the first screen; summary.txt keeps the totals line
    assert "total: 1 compiled frame" in (seed_runs["parametrized"].run_dir / "summary.txt").read_text()
    assert "hottest: " in err and "wrote " in err and "session.json" in err
    if torch_release() >= (2, 5):  # 2.4: no property traces (NO_PROPERTIES_24)
        assert "hottest: parametrization (64 properties via Parametrization" in err


def test_restart_sample_records_restarts_with_reasons(tmp_path: Path) -> None:
    r = profile(tmp_path, [str(SAMPLES / "restart_analysis.py"), "--depth", "150"])
    assert r.returncode == 0, r.stderr
    s = load_session(r.run_dir)
    fwd = next(f for f in s.frames if f.name == "forward")
    # sampled time in the discarded attempt ~ torch's own measure of it (wide bounds: noisy CI)
    before = fwd.metrics["dynamo_time_before_restart_s"]
    assert fwd.axes is not None and 0.5 * before < fwd.axes.restart_waste.seconds < 1.5 * before
    assert fwd.restarts >= 1 and fwd.trace_id == f"{fwd.compile_id}_{fwd.restarts}"
    assert fwd.restart_reasons and any("graph_break" in x for x in fwd.restart_reasons)
    assert [a.index for a in fwd.attempts] == list(range(fwd.restarts + 1))
    assert s.axes is not None and s.axes.restart_waste.seconds > 0  # the discarded attempt's time is kept


def test_graph_breaks_and_recompiles_are_counted(tmp_path: Path) -> None:
    r = profile(tmp_path, [str(SAMPLES / "graph_breaks_recompiles.py")])
    assert r.returncode == 0, r.stderr
    s = load_session(r.run_dir)
    steps = [f for f in s.frames if f.name == "step"]
    resumes = [f for f in s.frames if f.name.startswith("torch_dynamo_resume_in_step")]
    assert [f.compile_id for f in steps] == ["0/0", "0/1", "0/2"]
    assert len(resumes) == 3
    assert sum(f.graph_breaks for f in s.frames) == 3
    assert all(f.graph_breaks == 1 for f in steps)
    assert all("print" in f.graph_break_reasons[0].reason for f in steps)
    assert steps[0].graph_break_reasons[0].lineno is not None
    assert steps[0].recompile_reason is None
    assert steps[1].recompile_reason and "mismatch" in steps[1].recompile_reason
    assert any("recompiled 2 times" in f.text for f in findings(s))


def test_crash_after_compile_keeps_what_was_compiled(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text(
        "import torch\n"
        "f = torch.compile(lambda x: x.sin() + 1, backend='eager')\n"
        "f(torch.ones(3))\n"
        "raise RuntimeError('after compiling')\n"
    )
    r = profile(tmp_path, ["crash.py"])
    assert r.returncode == 1
    assert "RuntimeError: after compiling" in r.stderr
    s = load_session(r.run_dir)
    assert len(s.frames) == 1 and s.frames[0].status == "ok"
    assert s.run.end_reason == "exception"


def test_report_reproduces_the_outputs(seed_runs: dict[str, CliResult], tmp_path: Path) -> None:
    src = seed_runs["parametrized"].run_dir
    out = tmp_path / "again"
    proc = run_dynaprof(["report", str(src), "-o", str(out)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    originals = {p.relative_to(src) for p in src.rglob("*") if p.is_file()}
    again = {p.relative_to(out) for p in out.rglob("*") if p.is_file()}
    assert again >= {p for p in originals if not str(p).startswith(("cprofile", "pyspy"))}
    for rel in again:
        if (src / rel).exists():
            assert (src / rel).read_bytes() == (out / rel).read_bytes(), rel


def test_parametrization_attribution_matches_the_compile_time_difference(tmp_path: Path) -> None:
    """Same process, warm pair: sampled parametrization time ~ (parametrized - plain) compile time
    (torch 2.4 too: there the parametrized classes' inlined calls and deep copies are that time)."""
    r = profile(tmp_path, [str(SAMPLES / "parametrized_linear.py"), "--both", "--repeat", "2", "--layers", "16"])
    assert r.returncode == 0, r.stderr
    frames = sorted(load_session(r.run_dir).frames, key=lambda f: f.start_s)
    assert len(frames) == 4
    t, f = frames[2], frames[3]  # the warm pair (the first compile also pays one-time imports)
    assert not f.properties and _param(f) == 0
    diff = (t.compile_time_s or 0) - (f.compile_time_s or 0)
    sampled = _param(t)
    assert diff > 0
    # wide bounds: timings on shared CI machines are noisy; the benchmark measures the real figure
    assert 0.4 * diff < sampled < 1.8 * diff
    if torch_release() >= (2, 5):  # torch 2.4 traces no property: no exact timers
        assert any(p.parametrized for p in t.properties)
        exact = sum(p.seconds for p in t.properties)
        assert 0.4 * diff < exact < 1.8 * diff


def test_lora_sample_names_the_adapted_weights(tmp_path: Path) -> None:
    r = profile(tmp_path, [str(SAMPLES / "lora_transformer.py"), "--layers", "2", "--dim", "64"])
    assert r.returncode == 0, r.stderr
    s = load_session(r.run_dir)
    (f,) = s.frames
    if torch_release() < (2, 5):  # no property traced: the adapted class's calls name it, weights unknown
        assert s.axes is not None and "parametrized Linear calls (Module._call_impl inlined per class)" in \
            s.axes.parametrizations, s.axes.parametrizations
        assert "parametrization cost" in unwrap(r.stderr) and not f.properties
        return
    props = {p.label: p for p in f.properties if p.parametrized}
    assert set(props) == {"Linear.weight"} and props["Linear.weight"].instances == 8
    assert _param(s) > 0
    assert "parametrization (8 properties via LoRA: Linear.weight x8) cost" in unwrap(r.stderr)


THREAD_SAMPLER_SCRIPT = """import signal
import torch

hits = []
signal.signal(signal.SIGALRM, lambda *_: hits.append(1))  # the script's own timer, as some programs have
signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
""" + sin_loop(40) + """
f(torch.ones(4))
signal.setitimer(signal.ITIMER_REAL, 0)
print("alarms", len(hits))
"""


@pytest.mark.torch
def test_the_thread_sampler_switch_leaves_sigalrm_to_the_script(tmp_path: Path) -> None:
    """``--thread-sampler`` (``CaptureOptions.use_signal``, declared once): every sample comes
    from the sampler thread, none from a timer signal, and the script's own SIGALRM handler and
    timer run as under python."""
    (tmp_path / "alarm.py").write_text(THREAD_SAMPLER_SCRIPT)
    plain = THREAD_SAMPLER_SCRIPT.replace("signal.s", "# signal.s")  # no timer of its own
    (tmp_path / "plain.py").write_text(plain)
    counts = {}
    for name, opts in (("plain", []), ("plain", ["--thread-sampler"]), ("alarm", ["--thread-sampler"])):
        r = run_dynaprof(["run", "-q", "--force", "-o", "run", *opts, f"{name}.py"], cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        s = load_session(tmp_path / "run")
        assert s.samples is not None and s.samples.count > 0
        counts[(name, bool(opts))] = s.samples.signal_samples
        if name == "alarm":
            assert int(r.stdout.split("alarms", 1)[1]) > 0  # the script's own alarms went off
    assert counts[("plain", False)] > 0  # by default the main thread is sampled by SIGALRM
    assert counts[("plain", True)] == counts[("alarm", True)] == 0
