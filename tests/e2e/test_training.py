"""Every compile of a training step: AOT autograd's lazy backward compile, compiled autograd, the
optimizer step; the forward / backward split; the importer's parity with the live capture."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from dynaprof.analysis.budgets import Budget, check, recompiles
from dynaprof.analysis.findings import findings, totals
from dynaprof.ingest.assemble import ParentFacts, assemble
from dynaprof.ingest.trace_to_session import build_session
from dynaprof.model.session import Location, Session, compile_by_kind, display_name
from dynaprof.model.store import load_session
from dynaprof.render.terminal import summary_text
from tests.conftest import ROOT, SAMPLES, load_benchmark, profile, run_dynaprof
from tests.helpers import requires_torch, torch_release, unwrap

FIXTURE = ROOT / "tests" / "data" / "torch_trace" / "training_step.log.gz"


def _bwd_metrics(path: Path) -> dict[str, object]:
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if '{"bwd_compilation_metrics"' in line:
                return json.loads(line[line.index("{"):])["bwd_compilation_metrics"]  # type: ignore[no-any-return]
    raise AssertionError("the fixture has no bwd_compilation_metrics record")


def test_import_makes_the_backward_compile_its_own_frame(tmp_path: Path) -> None:
    s = build_session(FIXTURE)
    fwd, bw = s.frame("0/0"), s.frame("0/0:bw")
    assert fwd is not None and bw is not None
    assert (fwd.kind, bw.kind, bw.forward_key, bw.compile_id) == ("forward", "backward", "0/0", "0/0")
    raw = _bwd_metrics(FIXTURE)  # what tlparse's bwd_compilation_metrics page shows for 0/0
    assert bw.compile_time_s == pytest.approx(int(raw["duration_us"]) / 1e6)  # type: ignore[call-overload]
    assert bw.status == "ok" and bw.guard_count is None and "entire_backward_compile" in bw.phases
    assert "entire_backward_compile" not in fwd.phases  # its spans left the forward frame
    assert (bw.name, bw.filename, bw.lineno) == (fwd.name, fwd.filename, fwd.lineno)
    assert fwd.metrics.get("is_forward") is not False
    kinds = compile_by_kind(s.frames)
    assert kinds["backward"] == pytest.approx(bw.compile_time_s)
    assert s.total_compile_s == pytest.approx(sum(kinds.values()))
    assert recompiles(s) == 0  # the backward is not a recompile of its forward
    assert not any(f.key == "recompiles" for f in findings(s))


def _records(backward_window: bool) -> list[dict[str, object]]:
    recs: list[dict[str, object]] = [
        {"t": "start", "epoch_ns": 0},
        {"t": "compile_start", "key": "0/0", "cid": "0/0", "gen": 0, "tid": 1, "ts": 0.0, "name": "inner",
         "file": "/x/torch/_dynamo/external_utils.py", "line": 67, "call_site": [], "kind": "forward",
         "wrapped": ["MLP", "/u/model.py", 11]},
        {"t": "metrics", "key": "0/0", "tid": 1, "m": {"entire_frame_compile_time_s": 1.0, "is_forward": True,
                                                       "guard_count": 7}},
        {"t": "compile_end", "key": "0/0", "ts": 1.0, "duration": 1.01, "attempt": 0},
    ]
    if backward_window:
        recs += [
            {"t": "compile_start", "key": "0/0:bw", "cid": "0/0", "gen": 0, "tid": 1, "ts": 2.0, "name": "inner",
             "file": "/x/torch/_dynamo/external_utils.py", "line": 67, "call_site": [], "kind": "backward",
             "fwd": "0/0", "wrapped": ["MLP", "/u/model.py", 11]},
            {"t": "compile_end", "key": "0/0:bw", "ts": 6.0, "duration": 4.1, "attempt": 0},
        ]
    recs += [
        {"t": "metrics", "key": "0/0:bw" if backward_window else None, "kind": "backward", "fwd": "0/0",
         "ts": 2.0, "tid": 1, "m": {"is_forward": False, "duration_us": 4_000_000}},
        {"t": "end", "exit_status": 0, "reason": "exited", "ts": 7.0},
    ]
    return recs


@pytest.mark.parametrize("backward_window", [True, False])
def test_backward_metrics_never_merge_into_the_forward(backward_window: bool) -> None:
    s = assemble(iter(_records(backward_window)), ParentFacts(command=["x"], exit_status=0))
    fwd, bw = s.frame("0/0"), s.frame("0/0:bw")
    assert fwd is not None and bw is not None
    assert fwd.metrics["is_forward"] is True and fwd.compile_time_s == 1.0 and fwd.guard_count == 7
    assert bw.kind == "backward" and bw.compile_time_s == 4.0 and bw.metrics["is_forward"] is False
    assert s.total_compile_s == 5.0 and compile_by_kind(s.frames) == {"forward": 1.0, "backward": 4.0}
    t = totals(s)
    assert (t["forward_s"], t["backward_s"]) == (1.0, 4.0)
    # names: the module's class and forward, never torch's wrapper; the session keeps torch's name
    assert display_name(fwd) == ("MLP", "/u/model.py", 11) and fwd.name == "inner"
    assert display_name(bw)[0] == "MLP [backward]" and bw.wrapped == Location("MLP", "/u/model.py", 11)
    text = summary_text(s)
    assert "MLP [backward] (model.py:11)" in text and "inner" not in text and "external_utils" not in text
    assert "compile by kind: forward 1.00 s (20%), backward 4.00 s (80%)" in text
    assert "backward compiles took 4.00 s (80% of compile" in text
    result = check(s, Budget(max_compile_time_s=2.0))
    assert [b.message for b in result.breaches] == [
        "compile time 5.00 s (forward 1.00 s, backward 4.00 s) > budget 2.00 s"
    ]


def test_older_sessions_load_as_forward_frames(tmp_path: Path) -> None:
    s = assemble(iter(_records(True)), ParentFacts(command=["x"], exit_status=0))
    from dynaprof.model.codec import to_json

    data = to_json(s)
    for f in data["frames"]:
        for k in ("kind", "forward_key", "wrapped"):
            del f[k]
    (tmp_path / "session.json").write_text(json.dumps(data))
    old: Session = load_session(tmp_path / "session.json")
    assert [f.kind for f in old.frames] == ["forward", "forward"] and old.frames[0].wrapped is None


#: what a torch 2.4 TORCH_TRACE log lacks of a lazy backward compile
NO_BACKWARD_LOG_24 = ("torch 2.4 logs no backward compilation metrics and no entire_backward_compile span: its "
                      "log holds no backward compile (the import warns so); live capture still finds it")


@pytest.mark.torch
@requires_torch("2.5", NO_BACKWARD_LOG_24)
def test_live_training_step_captures_the_backward_compile_like_the_importer(tmp_path: Path) -> None:
    trace_dir = tmp_path / "trace"
    r = profile(tmp_path, [str(SAMPLES / "training_step.py"), "--no-parametrize", "--backend", "aot_eager",
                           "--layers", "16", "--compile-optimizer"], "--torch-trace", str(trace_dir))
    assert r.returncode == 0, r.stderr[-3000:]
    s = load_session(r.run_dir / "session.json")
    fwd, bw = s.frame("0/0"), s.frame("0/0:bw")
    assert fwd is not None and bw is not None, [f.key for f in s.frames]
    assert (fwd.kind, bw.kind, bw.forward_key) == ("forward", "backward", "0/0")
    assert fwd.metrics["is_forward"] is True  # torch's backward metrics no longer overwrite the forward's
    assert bw.metrics["is_forward"] is False and bw.compile_time_s and bw.compile_time_s > 0
    assert bw.start_s > fwd.start_s + (fwd.compile_time_s or 0)  # at the first .backward(), after the forward
    assert [sp.name for sp in bw.spans] == ["entire_backward_compile"] and bw.guard_count is None
    assert any(c.filename.endswith("training_step.py") for c in bw.call_site)  # the loss.backward() line
    assert display_name(fwd)[0] == "forward"  # Module.forward is compiled directly: already the user's name
    optimizer = [f for f in s.frames if f.name == "step" and f.filename.endswith("sgd.py")]
    assert optimizer and optimizer[0].kind == "forward"  # torch.compile(opt.step): a frame of its own
    assert sum(1 for f in s.frames if f.kind == "backward") == 1
    assert "compile by kind: forward" in unwrap(r.stderr) and "backward" in r.stderr
    # the importer reads the log written in the same run into the same backward entry
    imported = build_session(next(trace_dir.glob("*.log")))
    ibw = imported.frame("0/0:bw")
    assert ibw is not None and ibw.kind == "backward" and ibw.forward_key == "0/0"
    assert ibw.compile_time_s == pytest.approx(bw.compile_time_s, abs=1e-6)  # both are torch's duration_us
    assert {f.key for f in imported.frames if f.kind == "backward"} == {"0/0:bw"}


_RECORDER = textwrap.dedent(
    """
    import json, sys, threading
    import torch
    from dynaprof.capture.stacks import FunctionTable
    from dynaprof.capture.torch_hooks import Recorder

    records, opened = [], []
    rec = Recorder(records.append, 0, FunctionTable())
    rec.install(inline_profile=False)
    def started(tid):
        w = rec.current(tid)
        opened.append([w.key, w.kind, tid == threading.get_ident()])
    rec.on_window_start = started
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8))
    x = torch.randn(4, 8)
    if sys.argv[1] == "compiled_autograd":
        torch._dynamo.config.compiled_autograd = True
        @torch.compile(backend="aot_eager")
        def train(x):
            m(x).sum().backward()
        train(x)
    else:
        torch.compile(m, backend="aot_eager")(x).sum().backward()
    starts = [{k: r.get(k) for k in ("key", "cid", "kind", "name", "wrapped", "fwd")}
              for r in records if r["t"] == "compile_start"]
    metrics = [[r["key"], r["m"].get("is_forward")] for r in records if r["t"] == "metrics"]
    print(json.dumps({"hooks": rec.hooks, "opened": opened, "starts": starts, "metrics": metrics,
                      "left": {str(t): len(s) for t, s in rec.windows.items() if s}}))
    """
)


def _run_recorder(mode: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", _RECORDER, mode], capture_output=True, text=True, timeout=300,
                          env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.torch
def test_backward_window_starts_the_sampler_and_takes_the_backward_metrics() -> None:
    got = _run_recorder("lazy")
    # the sampler (and cProfile) start for the backward compile, on the thread running it
    assert got["opened"] == [["0/0", "forward", True], ["0/0:bw", "backward", True]]
    starts = got["starts"]
    assert starts[0]["name"] == "inner" and starts[0]["wrapped"][0] == "Sequential"  # torch.compile(module)
    assert starts[1] == {**starts[0], "key": "0/0:bw", "kind": "backward", "fwd": "0/0"}
    # torch 2.4 logs no backward metrics, nor is_forward in a forward's: the window is its only record
    assert got["metrics"] == ([["0/0", True], ["0/0:bw", False]] if torch_release() >= (2, 5) else [["0/0", None]])
    assert got["left"] == {}  # every window closed


@pytest.mark.torch
@requires_torch("2.5", "compiled autograd's capture of the autograd graph is found from its phase event, which "
                "torch 2.4 lacks (the session warns so)")
def test_compiled_autograd_gets_its_own_frames() -> None:
    got = _run_recorder("compiled_autograd")
    kinds = {s["key"]: s["kind"] for s in got["starts"]}
    assert kinds.get("0/0") == "forward"
    ca = [k for k, kind in kinds.items() if kind == "compiled_autograd"]
    assert "!0" in ca  # compiled autograd's capture of the autograd graph, its compile id as torch prints it
    assert any(k.startswith("!0/") for k in ca)  # Dynamo compiling the captured graph
    assert got["left"] == {}


@pytest.mark.torch
@pytest.mark.inductor
def test_inductor_backward_compile_is_sampled_and_attributed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a warm AOTAutograd cache (an earlier run of this test) loads the backward instead of compiling it
    monkeypatch.setenv("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")
    r = profile(tmp_path, [str(SAMPLES / "training_step.py"), "--no-parametrize", "--backend", "inductor",
                           "--steps", "1"], timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    s = load_session(r.run_dir / "session.json")
    bw = s.frame("0/0:bw")
    assert bw is not None and bw.kind == "backward"
    assert bw.compile_time_s and bw.compile_time_s > 0
    assert any(n in bw.phases for n in ("inductor_compile", "compile_fx.<locals>.bw_compiler", "backend_compile")) \
        or len(bw.phases) > 1 or "phases" not in s.capture.hooks, bw.phases  # torch 2.4: no phase events
    assert s.samples is not None
    sampled = sum(st.seconds for st in s.samples.stacks if st.frame == "0/0:bw")
    assert sampled > 0.5 * bw.compile_time_s  # sampled while it runs
    assert bw.attribution and sum(bw.attribution.values()) == pytest.approx(sampled, rel=0.05)
    # the ops after AOT autograd: counted the same way for every AOT backend (docs/reports.md). The
    # forward graph is aot_eager's; the backward is smaller under Inductor, whose joint-graph passes
    # (run in its partitioner, before AOT autograd hands the graphs over) fold a transpose of a
    # transpose and drop detaches, and whose decompositions split threshold_backward and the like
    fwd = s.frame("0/0")
    assert fwd is not None and fwd.inductor_ir_nodes and bw.inductor_kernels is not None
    (tmp_path / "aot").mkdir()
    r = profile(tmp_path / "aot", [str(SAMPLES / "training_step.py"), "--no-parametrize", "--backend", "aot_eager",
                                   "--steps", "1"], "--sampler", "none")
    assert r.returncode == 0, r.stderr[-3000:]
    aot = load_session(r.run_dir / "session.json")
    afwd, abw = aot.frame("0/0"), aot.frame("0/0:bw")
    assert afwd is not None and abw is not None and afwd.inductor_ir_nodes is None
    assert fwd.aot_graph_ops and fwd.aot_graph_ops == afwd.aot_graph_ops, (fwd.aot_graph_ops, afwd.aot_graph_ops)
    assert bw.aot_graph_ops and abw.aot_graph_ops and bw.aot_graph_ops <= abw.aot_graph_ops
    if torch_release() >= (2, 5):  # torch 2.4's Inductor hands over the same backward as aot_eager
        assert bw.aot_graph_ops < abw.aot_graph_ops


# -- recompiles in later iterations: guard failures at run time -----------------------------------

_RECOMPILING_LOOP = textwrap.dedent(
    """
    import sys
    import torch

    DYNAMIC = {"static": False, "auto": None}[sys.argv[1]]
    torch.manual_seed(0)


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 16)
            self.b = torch.nn.Linear(16, 4)
            self.scale_output = False

        def forward(self, x):
            y = self.b(torch.relu(self.a(x)))
            if self.scale_output:  # a Python flag the forward reads: Dynamo guards on it
                y = y * 2
            return y


    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    compiled = torch.compile(net, backend="aot_eager", dynamic=DYNAMIC)
    for i in range(6):
        net.scale_output = i >= 5  # iteration 5 flips the flag
        x = torch.randn(8 if i < 3 else 12, 16)  # iteration 3 changes the batch size
        loss = compiled(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"iteration {i}: loss {loss.item():.4f}")
    """
)
_RECOMPILES_LOG = re.compile(r"\[(\d+/\d+)\] \[__recompiles\] (.*)$")
_ENTRY = re.compile(r"\d+/\d+: ")


def _torch_recompile_reasons(stderr: str) -> dict[str, list[str]]:
    """{compile id: the guard failures torch's recompiles log lists for it}: one entry per cache
    entry that failed (``<its compile id>: <first failing guard>``, with any lines that follow it)."""
    out: dict[str, list[str]] = {}
    for line in stderr.splitlines():
        m = _RECOMPILES_LOG.search(line)
        if m is None:
            continue
        cid, text = m.groups()
        if text.startswith("Recompiling function"):
            out[cid] = []
        elif text.startswith("    - "):
            text = text[len("    - "):]
            # one entry per line where torch prefixes each with its compile id (2.4 does not)
            if _ENTRY.match(text) or not out[cid] or torch_release() < (2, 5):
                out[cid].append(text)
            else:
                out[cid][-1] += "\n" + text
    return out


@pytest.mark.torch
@pytest.mark.parametrize("dynamic", ["static", "auto"])
def test_recompiles_in_later_iterations_are_frames_with_every_failing_guard(tmp_path: Path, dynamic: str) -> None:
    script = tmp_path / "recompiling_loop.py"
    script.write_text(_RECOMPILING_LOOP)
    trace_dir = tmp_path / "trace"
    proc = run_dynaprof(["run", "-o", str(tmp_path / "run"), "--torch-trace", str(trace_dir), str(script), dynamic],
                        cwd=tmp_path, env={"TORCH_LOGS": "recompiles"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1].startswith("iteration 5: loss")
    logged = _torch_recompile_reasons(proc.stderr)
    assert list(logged) == ["0/1", "0/2"], proc.stderr[-3000:]
    # iteration 3: the batch size; iteration 5: the flag, failing on the newest entry, the size on the oldest
    size = "size mismatch at index 0. expected 8, actual 12"  # torch 2.4: "tensor 'L['x']' size...", no "0/0: "
    assert logged["0/1"] in (["0/0: tensor 'x' " + size], ["tensor 'L['x']' " + size])
    assert len(logged["0/2"]) == 2 and logged["0/2"][0].startswith(("0/1: self.scale_output == False",
                                                                    "___check_obj_id(L['self'].scale_output"))
    assert logged["0/2"][1] == logged["0/1"][0]
    live = load_session(tmp_path / "run" / "session.json")
    imported = build_session(next(trace_dir.glob("*.log")))
    # static shapes: every recompiled forward compiles its own backward lazily, at that iteration's
    # .backward(); with automatic dynamic shapes the recompile 0/1 is dynamic in the batch, its
    # backward saves a SymInt, and AOT autograd compiles that backward eagerly, inside the forward
    # compile (graph_compile.py: num_symints_saved_for_bw > 0): no backward compile of its own
    lazy = ["0/0", "0/1", "0/2"] if dynamic == "static" else ["0/0"]
    # torch 2.4 logs nothing of a lazy backward compile: live capture finds them, an import cannot
    for s, known in ((live, lazy), (imported, lazy if torch_release() >= (2, 5) else [])):
        fwd = [f for f in s.frames if f.kind == "forward"]
        bws = [f for f in s.frames if f.kind == "backward"]
        assert [f.key for f in fwd] == ["0/0", "0/1", "0/2"], [f.key for f in s.frames]
        assert [(b.key, b.forward_key, b.compile_id) for b in bws] == [(f"{k}:bw", k, k) for k in known]
        by_key = {f.key: f for f in s.frames}
        for b in bws:  # at that iteration's .backward(): after its forward, before the next recompile
            f = by_key[str(b.forward_key)]
            assert b.start_s >= f.start_s + (f.compile_time_s or 0) - 1e-3
            assert b.recompile_reason is None and (b.name, b.lineno) == (f.name, f.lineno)
        assert by_key["0/0"].recompile_reason is None
        for cid in ("0/1", "0/2"):  # every failing guard, as torch's recompiles log lists them
            reason = by_key[cid].recompile_reason  # live and imported alike (the log's recompile_reasons)
            # (torch 2.4's log has no recompile reasons: unknown in its import, never a guess)
            said = "\n".join(logged[cid]) if s is live or torch_release() >= (2, 5) else None
            assert reason == said, (s is live, cid, reason)
        if known:  # iteration 3, after iteration 0's backward
            assert by_key["0/1"].start_s > by_key["0/0:bw"].start_s
        assert recompiles(s) == 2  # the backward compiles are not recompiles
    if dynamic == "static":
        assert live.frame("0/1:bw").start_s < live.frame("0/2").start_s  # type: ignore[union-attr]
    line = _RECOMPILING_LOOP.splitlines().index("    loss.backward()") + 1
    for b in live.frames:
        if b.kind == "backward":  # the user's .backward() line of the loop
            assert any(c.filename == str(script) and c.lineno == line for c in b.call_site), b.call_site
    assert "recompiled 2 times" in unwrap(proc.stderr)


# -- importer parity with tlparse's backward pages ----------------------------------------------


def _bench_tlparse() -> Any:
    return load_benchmark("bench_training_tlparse")


_TLPARSE = shutil.which("tlparse", path=str(Path(sys.executable).parent)) or shutil.which("tlparse")
needs_tlparse = pytest.mark.skipif(_TLPARSE is None, reason="tlparse is not installed (pip install tlparse)")


@pytest.mark.torch
@needs_tlparse
@requires_torch("2.5", NO_BACKWARD_LOG_24 + "; tlparse has no backward page to compare")
def test_backward_pages_agree_with_tlparse(tmp_path: Path) -> None:
    bench = _bench_tlparse()
    r = bench.measure("aot_eager", tmp_path / "step", tlparse=_TLPARSE)
    assert [p["compile_id"] for p in r["pages"]] == ["0/0"]  # the optimizer steps have no backward
    assert r["imported"] == [] and r["live"] == [], r
    # several backward compiles: the recompiling loop's (static shapes), from a log of plain python
    script = tmp_path / "recompiling_loop.py"
    script.write_text(_RECOMPILING_LOOP)
    env = {**os.environ, "TORCH_TRACE": str(tmp_path / "trace"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(script), "static"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (log,) = (tmp_path / "trace").glob("*.log")
    tl = subprocess.run([str(_TLPARSE), str(log), "-o", str(tmp_path / "tl"), "--overwrite", "--no-browser"],
                        capture_output=True, text=True, timeout=120)
    assert tl.returncode == 0, tl.stderr[-2000:]
    pages = bench.backward_pages(tmp_path / "tl")
    assert [p.compile_id for p in pages] == ["0/0", "0/1", "0/2"]
    assert all(p.duration_s and p.inductor_s is None and not p.failures for p in pages)
    assert bench.compare(pages, build_session(log)) == []
    # a mismatch is reported, not hidden
    worse = [bench.Page(p.compile_id, p.url, p.inductor_s, p.code_gen_s, p.failures, (p.duration_s or 0) + 1)
             for p in pages[:2]]
    problems = bench.compare(worse, build_session(log))
    assert problems[0].startswith("backward compile ids: tlparse {'0/0': 1, '0/1': 1}") and len(problems) == 3


@pytest.mark.torch
@pytest.mark.inductor
@pytest.mark.slow
@needs_tlparse
def test_inductor_backward_pages_agree_with_tlparse(tmp_path: Path) -> None:
    r = _bench_tlparse().measure("inductor", tmp_path, layers=2, tlparse=_TLPARSE)
    (page,) = r["pages"]
    assert page["compile_id"] == "0/0" and page["inductor_s"] and page["code_gen_s"] is not None
    assert r["imported"] == [] and r["live"] == [], r


# -- double backward --------------------------------------------------------------------------------

_DOUBLE_BACKWARD = textwrap.dedent(
    """
    import sys
    import torch

    torch.manual_seed(0)
    m = torch.nn.Linear(4, 4)


    def loss_fn(x):
        return (torch.tanh(m(x)) ** 2).sum()


    compiled = torch.compile(loss_fn, backend=sys.argv[1])
    x = torch.randn(2, 4, requires_grad=True)
    (g,) = torch.autograd.grad(compiled(x), x, create_graph=True)  # first backward, with a graph
    print("first backward ok", tuple(g.shape), g.requires_grad)
    g.pow(2).sum().backward()  # second backward: through the compiled backward
    print("double backward ok")
    """
)
DOUBLE_BACKWARD_ERROR = "RuntimeError: torch.compile with aot_autograd does not currently support double backward"


@pytest.mark.torch
@pytest.mark.parametrize("backend", ["aot_eager", "eager"])
def test_double_backward_fails_under_aot_autograd_as_under_python(tmp_path: Path, backend: str) -> None:
    script = tmp_path / "double_backward.py"
    script.write_text(_DOUBLE_BACKWARD)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plain = subprocess.run([sys.executable, str(script), backend], capture_output=True, text=True, cwd=tmp_path,
                           env=env, timeout=300)
    r = profile(tmp_path, [str(script), backend])
    assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout)
    s = load_session(r.run_dir / "session.json")
    if backend == "eager":  # no AOT autograd: Dynamo's graph runs under eager autograd, which differentiates twice
        assert r.returncode == 0 and r.stdout.endswith("double backward ok\n")
        assert [f.kind for f in s.frames] == ["forward"]
        return
    # torch 2.13: AOT autograd compiles the backward lazily at the first backward (create_graph=True
    # works), and its compiled backward refuses to be differentiated: the script's own traceback,
    # its exit status 1, what was compiled kept
    assert r.returncode == 1 and r.stdout == "first backward ok (2, 4) True\n"
    assert plain.stderr.rstrip().endswith(DOUBLE_BACKWARD_ERROR)
    assert plain.stderr in r.stderr  # the traceback as python prints it, not one of dynaprof's
    assert "exception (status 1)" in unwrap(r.stderr)
    assert (s.run.exit_status, s.run.end_reason) == (1, "exception")
    assert [(f.key, f.kind, f.status, f.forward_key) for f in s.frames] == [
        ("0/0", "forward", "ok", None), ("0/0:bw", "backward", "ok", "0/0")]
