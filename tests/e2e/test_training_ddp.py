"""DDP's graph split: torch's DDP optimizer compiles one subgraph per gradient bucket, inside the
model's one frame compile; dynaprof shows each as a ``ddp_bucket submod_N`` span (phase) of that
frame, and the split's lazy backward compiles (one per bucket) as the frame's backward compiles.

``samples/ddp_step.py`` runs as a one-rank job without torchrun (fast tests) and on 2 ranks under
torchrun (slow test). CPU, gloo, aot_eager."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from dynaprof.capture.hooks.ddp import DDP_MODULE, install_ddp_buckets
from dynaprof.capture.stacks import FunctionTable
from dynaprof.capture.torch_hooks import Recorder
from dynaprof.ingest.trace_to_session import build_session
from dynaprof.model.journal import DDP_BUCKET_SPAN
from dynaprof.model.session import CompiledFrame, Session
from dynaprof.model.store import load_session
from tests.conftest import SAMPLES, load_benchmark, profile, run_dynaprof
from tests.helpers import torch_release, unwrap

SAMPLE = str(SAMPLES / "ddp_step.py")
#: the sample's Linear(512, 512): weight and bias, fp32
LAYER_BYTES = (512 * 512 + 512) * 4
BUCKETS = [f"{DDP_BUCKET_SPAN} submod_{i}" for i in range(4)]


def _recorder() -> tuple[Recorder, list[dict[str, Any]]]:
    records: list[dict[str, Any]] = []
    return Recorder(records.append, 0, FunctionTable()), records


def test_bucket_hook_waits_for_torch_to_import_the_split_and_warns_when_it_moved(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rec, records = _recorder()
    monkeypatch.delitem(sys.modules, DDP_MODULE, raising=False)
    rec.hooks.append("phases")
    install_ddp_buckets(rec)  # not imported yet: installed at the first phase event after torch imports it
    assert [(m, what) for m, what, _ in rec._lazy] == [(DDP_MODULE, "DDP bucket compiles")]
    monkeypatch.setitem(sys.modules, DDP_MODULE, types.ModuleType(DDP_MODULE))  # a torch without SubmodCompiler
    rec._install_lazy()
    assert rec._lazy == []
    assert [r["msg"] for r in records if r["t"] == "warn"] == [
        "DDP bucket compiles not captured (AttributeError: module 'torch._dynamo.backends.distributed' has no "
        "attribute 'SubmodCompiler'); their time shows in the frame's backend compile"
    ]
    with pytest.raises(AttributeError):  # already imported: installed at once (install() warns on a failure)
        install_ddp_buckets(rec)


def test_a_torch_without_phase_events_installs_the_bucket_hook_at_a_compile_window(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Torch 2.4 (no phase events): the hook waits for the next compile window after torch imports
    the split (2.4 imports it before it opens a DDP model's compile). A script that never uses DDP
    gets no warning, nor one that imports DDP (torch 2.4 imports it itself, for any backend lookup)."""
    rec, records = _recorder()
    monkeypatch.delitem(sys.modules, DDP_MODULE, raising=False)
    rec.install_step("ddp_buckets", lambda: install_ddp_buckets(rec))
    assert "ddp_buckets" in rec.hooks
    assert [(m, what) for m, what, _ in rec._lazy_at_window] == [(DDP_MODULE, "DDP bucket compiles")]
    rec._lazy_at_window = rec._install_imported(rec._lazy_at_window)  # a window opens: not imported yet
    rec.flush_guards()  # what the end of the run does
    assert len(rec._lazy_at_window) == 1 and [r for r in records if r["t"] == "warn"] == []
    monkeypatch.setitem(sys.modules, DDP_MODULE, types.ModuleType(DDP_MODULE))  # a torch without SubmodCompiler
    rec._lazy_at_window = rec._install_imported(rec._lazy_at_window)
    rec.flush_guards()
    assert rec._lazy_at_window == []
    (warning,) = [r["msg"] for r in records if r["t"] == "warn"]
    assert warning.startswith("DDP bucket compiles not captured (AttributeError"), warning


def _split_frame(s: Session) -> CompiledFrame:
    (f,) = [f for f in s.frames if f.kind == "forward" and f.filename.endswith("ddp_step.py")]
    return f


def _assert_split(s: Session) -> CompiledFrame:
    """The model's frame holds one span per bucket, inside its backend compile, and has one lazy
    backward compile per bucket."""
    f = _split_frame(s)
    spans = [sp for sp in f.spans if sp.name.startswith(DDP_BUCKET_SPAN + " ")]
    assert [sp.name for sp in spans] == BUCKETS
    assert [sp.args for sp in spans] == [
        {"bucket": i, "buckets": 4, "params": 2, "param_bytes": LAYER_BYTES} for i in range(4)
    ]
    if "phases" in s.capture.hooks:  # inside the frame's one backend compile
        (outer,) = [(sp.start_s, sp.duration_s) for sp in f.spans if sp.name == "backend_compile"]
    else:  # torch 2.4 has no phase events: inside the frame's compile window
        assert f.compile_time_s is not None
        outer = (f.start_s, f.metrics.get("window_s", f.compile_time_s))
    for sp in spans:  # compiled one after the other
        assert outer[0] - 1e-3 <= sp.start_s
        assert sp.start_s + sp.duration_s <= outer[0] + outer[1] + 1e-3
        assert f.phases[sp.name] == sp.duration_s
    assert all(a.start_s + a.duration_s <= b.start_s + 1e-3 for a, b in itertools.pairwise(spans))
    assert f.compile_time_s is not None and sum(sp.duration_s for sp in spans) <= f.compile_time_s
    bws = [b for b in s.frames if b.kind == "backward"]
    assert [(b.key, b.forward_key) for b in bws] == [
        (f"{f.key}:bw", f.key), *((f"{f.key}:bw{n}", f.key) for n in range(2, 5))
    ]
    return f


@pytest.mark.torch
def test_one_rank_ddp_compiles_one_subgraph_per_bucket(tmp_path: Path) -> None:
    r = profile(tmp_path, [SAMPLE, "--steps", "2"], "--torch-trace", str(tmp_path / "trace"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert [line[:7] for line in r.stdout.splitlines()] == ["step 0:", "step 1:"]  # the script's own output only
    assert "optimize_ddp=True, world 1" in r.stdout
    s = load_session(r.run_dir / "session.json")
    assert "ddp_buckets" in s.capture.hooks and not any("DDP" in w for w in s.capture.warnings)
    f = _assert_split(s)
    # torch.compile(DDP(model)): DDP's own forward breaks the graph (its logger, the skipped
    # _inside_ddp_forward context manager); the model's forward is compiled under that context,
    # which is what makes Dynamo hand its graph to DDPOptimizer
    assert f.name == "forward" and f.graph_breaks == 0
    # (torch 2.4 compiles no frame of the context manager's contextlib code)
    assert {x.filename.rsplit("/", 1)[-1] for x in s.frames if x.kind == "forward" and x is not f} == (
        {"external_utils.py", "contextlib.py"} if torch_release() >= (2, 5) else {"external_utils.py"})
    # shown in the frame's detail: the report's phase table and the timeline
    report = (r.run_dir / "report.html").read_text()
    assert all(f'<td class="code">{name}</td>' in report for name in BUCKETS)
    trace = json.loads((r.run_dir / "trace.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    shown = [e for e in events if str(e.get("name", "")).startswith(DDP_BUCKET_SPAN)]
    assert [e["name"] for e in shown] == BUCKETS and all(e["args"]["compile_id"] == f.compile_id for e in shown)
    # the same run's TORCH_TRACE log: a bucket span per optimize_ddp_split_child, each the bucket's
    # AOT autograd compile (inside the live span, which also holds the first bucket's setup)
    imported = _split_frame(build_session(next((tmp_path / "trace").glob("*.log"))))
    got = [sp for sp in imported.spans if sp.name.startswith(DDP_BUCKET_SPAN + " ")]
    if "phases" not in s.capture.hooks:  # torch 2.4 logs the children but no span to time them: none
        assert got == []
        return
    assert [sp.name for sp in got] == BUCKETS
    assert [sp.args for sp in got] == [{"bucket": i, "buckets": 4} for i in range(4)]
    live = {sp.name: sp for sp in f.spans}
    for sp in got:
        assert sp.duration_s <= live[sp.name].duration_s + 2e-3
        assert imported.phases[sp.name] == sp.duration_s


@pytest.mark.torch
@pytest.mark.parametrize("variant", ["sequential", "one_bucket", "no_optimization", "small_buckets"])
def test_where_torch_does_not_split(tmp_path: Path, variant: str) -> None:
    opts = {"sequential": ["--sequential"], "one_bucket": ["--layers", "1"],
            "no_optimization": ["--optimize-ddp", "no_optimization"],
            "small_buckets": ["--bucket-cap-mb", "0.5"]}[variant]
    r = profile(tmp_path, [SAMPLE, "--steps", "1", *opts])
    s = load_session(r.run_dir / "session.json")
    assert not any(sp.name.startswith(DDP_BUCKET_SPAN) for f in s.frames for sp in f.spans)
    if variant == "sequential":
        # nn.Sequential's forward is torch's own code: Dynamo does not compile it as a frame, so
        # only DDP's wrapper code is compiled (3 graph breaks), nothing of the model, no split
        assert r.returncode == 0, r.stderr[-3000:]
        assert not any(f.filename.endswith(("ddp_step.py", "container.py")) for f in s.frames)
        # (torch 2.4's Dynamo breaks once there, as TORCH_LOGS=graph_breaks says)
        breaks = 3 if torch_release() >= (2, 5) else 1
        assert sum(f.graph_breaks for f in s.frames) == breaks and not any(f.kind == "backward" for f in s.frames)
    elif variant in ("one_bucket", "no_optimization"):  # one graph: one compile, one backward
        # one_bucket: the parameters fit DDP's first bucket, and DDPOptimizer compiles the graph whole
        assert r.returncode == 0, r.stderr[-3000:]
        f = _split_frame(s)
        assert [(b.key, b.forward_key) for b in s.frames if b.kind == "backward"] == [(f"{f.key}:bw", f.key)]
    else:
        # DDPOptimizer keeps DDP's 1 MiB first bucket and refuses a smaller cap: the script fails
        # before Dynamo compiles the model's frame (no frame of it), with the status it has under python
        assert r.returncode == 1
        assert "AssertionError: First bucket should be smaller/equal to other buckets" in r.stderr
        assert not any(f.filename.endswith("ddp_step.py") for f in s.frames)
        assert s.run.exit_status == 1


def _bench_tlparse() -> Any:
    return load_benchmark("bench_training_tlparse")


def _split_children(log: Path) -> list[str]:
    """The names of torch's ``optimize_ddp_split_child`` records in a TORCH_TRACE log."""
    out = []
    for line in log.read_text().splitlines():
        if '{"optimize_ddp_split_child"' in line:
            out.append(json.loads(line[line.index("{"):])["optimize_ddp_split_child"]["name"])
    return out


@pytest.mark.torch
@pytest.mark.slow
def test_two_ranks_under_torchrun_split_per_bucket_on_every_rank(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    proc = run_dynaprof(["run", "--nproc-per-node", "2", "-o", str(tmp_path / "run"), "--torch-trace", str(trace),
                         SAMPLE, "--steps", "2"], cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "optimize_ddp=True, world 2" in proc.stdout
    assert "no divergence: every rank compiled the same frames" in unwrap(proc.stderr)
    tlparse = shutil.which("tlparse", path=str(Path(sys.executable).parent)) or shutil.which("tlparse")
    bench = _bench_tlparse() if tlparse else None
    for rank in (0, 1):
        s = load_session(tmp_path / "run" / f"rank-{rank}" / "session.json")
        assert s.run.rank == rank
        f = _assert_split(s)
        (log,) = trace.glob(f"*rank_{rank}_*.log")
        assert [f"{DDP_BUCKET_SPAN} {n}" for n in _split_children(log)] == BUCKETS  # torch's names for them
        imported = build_session(log)
        assert [(b.key, b.forward_key) for b in imported.frames if b.kind == "backward"] == [
            (b.key, b.forward_key) for b in s.frames if b.kind == "backward"]
        if bench is not None:  # tlparse's backward pages: four under the model's compile id
            out = tmp_path / f"tl{rank}"
            subprocess.run([tlparse, str(log), "-o", str(out), "--overwrite", "--no-browser"], check=True,
                           capture_output=True, timeout=120)
            pages = bench.backward_pages(out)
            assert [p.compile_id for p in pages] == [f.compile_id] * 4
            assert bench.compare(pages, imported) == [] and bench.compare(pages, s) == []
