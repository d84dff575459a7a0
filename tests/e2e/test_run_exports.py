"""End to end: `dynaprof run --cprofile --torch-trace` on the seed case, checked by the consumers
(pstats, the call graph, tlparse)."""

from __future__ import annotations

import pstats
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dynaprof.model import load_session
from tests.conftest import SAMPLES, CliResult, profile
from tests.helpers import requires_torch

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CliResult:
    tmp = tmp_path_factory.mktemp("exports")
    r = profile(tmp, [str(SAMPLES / "parametrized_linear.py"), "--layers", "8"], "--cprofile",
                "--torch-trace", str(tmp / "trace"))
    assert r.returncode == 0, r.stderr
    return r


def test_cprofile_files_load_in_pstats_and_cover_only_the_compile(run: CliResult) -> None:
    s = load_session(run.run_dir)
    (frame,) = s.frames
    assert frame.cprofile and s.artifacts["cprofile"] == "cprofile/run.prof"
    per_frame = pstats.Stats(str(run.run_dir / frame.cprofile))
    merged = pstats.Stats(str(run.run_dir / "cprofile" / "run.prof"))
    assert per_frame.total_calls == merged.total_calls > 1000  # type: ignore[attr-defined]
    assert frame.python_calls == per_frame.total_calls  # type: ignore[attr-defined]  # the exact count, kept
    funcs = {f"{fn}:{name}" for fn, _, name in merged.stats}  # type: ignore[attr-defined]
    assert any(f.endswith("convert_frame.py:_compile") for f in funcs)
    # only compile windows: the model's eager warm-up call is not in the profile
    assert not any(f.endswith("functional.py:linear") for f in funcs)


@requires_torch("2.5", "the parametrization's signature in cProfile data is Dynamo resolving its @property "
                "(resolve_data_descriptor), which torch 2.4 never does (the run says properties are not captured)")
def test_callgraph_from_cprofile_highlights_the_parametrization_path(run: CliResult) -> None:
    dot = (run.run_dir / "callgraph.dot").read_text()
    assert "cProfile (exact counts)" in dot
    assert "resolve_data_descriptor" in dot and "tp_descr_get_impl" in dot
    highlighted = [line for line in dot.splitlines() if "resolve_data_descriptor" in line and "penwidth" in line]
    assert highlighted, "the parametrization signature node is drawn with a highlighted outline"
    assert (run.run_dir / "cprofile" / "run.snakeviz.prof").exists()
    if shutil.which("dot") is not None:  # without Graphviz the run says so in a note (test_callgraph)
        assert (run.run_dir / "callgraph.svg").read_text().lstrip().startswith(("<?xml", "<svg", "<!--"))


@pytest.mark.skipif(shutil.which("tlparse") is None and not (Path(sys.executable).parent / "tlparse").exists(),
                    reason="tlparse is not installed")
def test_torch_trace_export_opens_in_tlparse(run: CliResult) -> None:
    logs = list((run.run_dir.parent / "trace").glob("*.log"))
    assert len(logs) == 1
    exe = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    out = run.run_dir.parent / "tl_out"
    proc = subprocess.run([exe, str(logs[0]), "-o", str(out), "--overwrite", "--no-browser"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (out / "index.html").exists()
    metrics = list(out.glob("*/compilation_metrics*.html"))
    assert metrics, "tlparse found the compile's metrics"
    # and dynaprof's own importer reads the same log back to the same frame
    from dynaprof.ingest.trace_to_session import import_torch_trace

    imported = import_torch_trace(logs[0])
    live = load_session(run.run_dir)
    assert [f.compile_id for f in imported.frames] == [f.compile_id for f in live.frames]
    assert imported.frames[0].guard_count == live.frames[0].guard_count
