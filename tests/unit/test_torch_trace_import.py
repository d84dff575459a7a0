"""Importing TORCH_TRACE logs: fixtures, robustness, fuzzing, and agreement with tlparse.

Fixtures are in tests/data/torch_trace/ (README.md there says how each was made). Tests marked
``torch`` produce fresh logs with the installed torch and compare per frame with tlparse.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaprof.analysis.compare import run_metrics
from dynaprof.analysis.sweep_measures import run_counts
from dynaprof.errors import DynaprofError
from dynaprof.ingest.torch_trace import is_torch_trace, parse_graph_break
from dynaprof.ingest.trace_to_session import OLD_LOG_UNKNOWN, import_torch_trace, import_torch_trace_ranks
from dynaprof.model.session import Session
from dynaprof.model.store import session_from_text, session_to_text
from dynaprof.render.markdown import totals_line
from tests.conftest import load_benchmark
from tests.helpers import ROOT_DIR, torch_release

ROOT = ROOT_DIR
DATA = ROOT / "tests" / "data" / "torch_trace"
SCRIPTS = DATA / "scripts"
VENV_BIN = Path(sys.executable).parent


def _load(name: str, **kw: Any) -> Session:
    s = import_torch_trace(DATA / name, **kw)
    assert session_from_text(session_to_text(s)) is not None  # the contract's codec accepts it
    return s


def _lines(name: str) -> list[bytes]:
    data = (DATA / name).read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).splitlines(keepends=True)


# -- fixtures -----------------------------------------------------------------------------------


def test_graph_break_and_recompile() -> None:
    s = _load("graph_break_recompile.log.gz")
    assert s.capture.source == "torch_trace" and s.capture.sampler == "none" and s.samples is None
    assert s.run.torch_version == "2.13.0+cpu" and s.run.complete and s.capture.warnings == []
    assert [f.key for f in s.frames] == ["0/0", "1/0", "0/1", "1/1"]
    assert [f.trace_id for f in s.frames] == ["0/0_1", "1/0", "0/1_1", "1/1"]
    assert [f.restarts for f in s.frames] == [1, 0, 1, 0]
    assert [f.guard_count for f in s.frames] == [11, 8, 11, 8]
    f0, f1, f2, f3 = s.frames
    assert (f0.name, Path(f0.filename).name, f0.lineno) == ("f", "graph_break_recompile.py", 6)
    assert f1.name == "torch_dynamo_resume_in_f_at_8"
    assert [a.index for a in f0.attempts] == [0, 1] and all(a.duration_s for a in f0.attempts)
    assert len(f0.restart_reasons) == 1 and "graph_break()" in f0.restart_reasons[0]
    assert f0.graph_breaks == 1 and f1.graph_breaks == 0
    gb = f0.graph_break_reasons[0]
    assert (Path(gb.filename or "").name, gb.lineno) == ("graph_break_recompile.py", 8)
    assert "torch._dynamo.graph_break()" in gb.reason and "Traceback" not in gb.reason
    assert f0.recompile_reason is None and "dtype mismatch" in (f2.recompile_reason or "")
    assert "dtype mismatch" in (f3.recompile_reason or "")
    assert f0.compile_time_s == pytest.approx(f0.phases["entire_frame_compile"], abs=2e-3)
    phases = {"dynamo", "entire_frame_compile", "compile_attempt_0", "compile_attempt_1", "build_guards"}
    assert phases <= set(f0.phases)
    assert [f.start_s for f in s.frames] == sorted(f.start_s for f in s.frames)
    assert all(f.status == "ok" and f.thread == s.run.pid for f in s.frames)
    assert f1.call_site[-1].name == "torch_dynamo_resume_in_f_at_8"
    assert "mismatch" not in json.dumps(f0.metrics) and f0.metrics["frame_key"] == "1"
    bt = next(sp for sp in f1.spans if sp.name == "bytecode_tracing")
    assert "variable_builder_call_time_s" in bt.args


def test_restart_inside_inlined_helper() -> None:
    s = _load("restart.log.gz")
    f = s.frames[0]
    assert (f.key, f.trace_id, f.restarts, f.name) == ("0/0", "0/0_1", 1, "f")
    assert [a.index for a in f.attempts] == [0, 1]
    assert f.attempts[0].start_s is not None and f.attempts[1].start_s is not None
    assert f.attempts[0].start_s < f.attempts[1].start_s
    assert f.graph_break_reasons[0].lineno == 8  # the break inside `helper`
    assert [g.trace_id for g in s.frames] == ["0/0_1", "1/0_1", "2/0", "3/0"]


def test_reset_starts_a_new_generation() -> None:
    s = _load("reset.log.gz")
    assert [(f.key, f.compile_id, f.generation) for f in s.frames] == [("0/0", "0/0", 0), ("0/0#1", "0/0", 1)]
    a, b = s.frames
    assert b.start_s > a.start_s + (a.compile_time_s or 0) - 1e-3
    assert all(len(f.spans) == 8 for f in s.frames)  # no span leaked into the other generation


def test_seed_guard_sources() -> None:
    f = _load("seed_layers4.log.gz").frames[0]
    assert (f.name, f.guard_count, f.guards.count, f.guards.shape_env_count) == ("forward", 371, 371, 0)
    assert (f.guards.code_text_lines, f.guards.code_text_chars) == (440, 107942)
    assert f.guards.latency_us is not None and f.guards.latency_us > 0
    src = f.guards.sources
    assert src["nn/utils/parametrize.py:get_parametrized"] == 37 and src["nn/utils/parametrize.py:forward"] == 105
    assert sum(src.values()) <= (f.guards.code_text_lines or 0)
    assert list(src.values()) == sorted(src.values(), reverse=True)
    assert f.ir_count == 695 and f.graph_op_count == 12 and f.call_site[0].name == "<module>"
    assert f.guards.tree_leaf_count is None  # not in the log: never invented


def test_failed_compile() -> None:
    (f,) = _load("failing_backend.log.gz").frames
    assert (f.status, f.fail_type) == ("failed", "BackendCompilerFailed")
    assert "backend exploded" in (f.fail_reason or "") and f.compile_time_s is not None


def test_compiled_autograd_ids(tmp_path: Path) -> None:
    lines = [
        line.replace(b'"frame_id": 0,', b'"compiled_autograd_id": 2, "frame_id": 0,') if line[:1] != b"\t" else line
        for line in _lines("one_frame.log")
    ]
    (tmp_path / "ca.log").write_bytes(b"".join(lines))
    (f,) = import_torch_trace(tmp_path / "ca.log").frames
    assert (f.key, f.compile_id, f.trace_id, f.guard_count) == ("!2/0/0", "!2/0/0", "!2/0/0", 10)


def test_corrupt_json_line_is_reported_and_skipped() -> None:
    s = _load("corrupt_json.log")
    (w,) = s.capture.warnings
    assert "line 233" in w and "compilation_metrics" in w
    f = s.frames[0]
    assert f.guard_count is None and f.status == "unfinished"
    assert f.compile_time_s == pytest.approx(f.phases["entire_frame_compile"])  # from the span instead
    with pytest.raises(DynaprofError, match=r"corrupt_json\.log:233: invalid JSON"):
        import_torch_trace(DATA / "corrupt_json.log", strict=True)


def test_truncated_file() -> None:
    s = _load("truncated.log")
    assert not s.run.complete and s.run.end_reason == "lost"
    assert any("truncated" in w for w in s.capture.warnings)
    assert s.frames[0].status == "unfinished"
    with pytest.raises(DynaprofError, match=r"truncated\.log:233: .*truncated"):
        import_torch_trace(DATA / "truncated.log", strict=True)


def test_truncated_inside_payload_and_gzip(tmp_path: Path) -> None:
    raw = b"".join(_lines("seed_layers4.log.gz"))
    cut = raw.index(b"TREE_GUARD_MANAGER") + 5000  # mid guard dump
    (tmp_path / "a.log").write_bytes(raw[:cut])
    s = import_torch_trace(tmp_path / "a.log")
    assert not s.run.complete and 0 < (s.frames[0].guards.code_text_lines or 0) < 440
    gz = (DATA / "restart.log.gz").read_bytes()
    (tmp_path / "b.log").write_bytes(gz[: len(gz) // 2])  # a gzip cut in half, with a misleading name
    s = import_torch_trace(tmp_path / "b.log")
    assert not s.run.complete and s.frames
    with pytest.raises(DynaprofError, match=r"b\.log:\d+: cannot read further"):
        import_torch_trace(tmp_path / "b.log", strict=True)
    (tmp_path / "c.log").write_bytes(raw[: raw.index(b"\n\t") + 1])  # envelope announces a payload, then EOF
    assert not import_torch_trace(tmp_path / "c.log").run.complete


def test_unknown_event_types_are_counted(tmp_path: Path) -> None:
    lines = _lines("one_frame.log")
    at = next(i for i in range(5, len(lines)) if not lines[i].startswith(b"\t"))  # a record boundary
    extra = [b'V1130 20:00:36.841000 1 torch/x.py:1] {"create_symbol": {"symbol": "s0"}, "frame_id": 0}\n'] * 3
    md5 = hashlib.md5(b"payload line").hexdigest().encode()
    extra.append(b'V1130 20:00:36.841000 1 torch/x.py:1] {"new_thing": {}, "has_payload": "%s"}\n' % md5)
    extra.append(b"\tpayload line\n")
    (tmp_path / "u.log").write_bytes(b"".join(lines[:at] + extra + lines[at:]))
    s = import_torch_trace(tmp_path / "u.log", strict=True)  # unknown types are not errors
    assert s.capture.warnings == ["skipped 4 events of 2 unknown types: create_symbol (3), new_thing (1)"]
    assert s.frames[0].guard_count == 10


def _without(tmp_path: Path, *kinds: bytes) -> Session:
    """``graph_break_recompile.log.gz`` without the entries of ``kinds`` (and their payloads), imported."""
    out, skip = [], False
    for line in _lines("graph_break_recompile.log.gz"):
        if not line.startswith(b"\t"):
            skip = any(k in line for k in kinds)
        if not skip:
            out.append(line)
    (tmp_path / "old.log").write_bytes(b"".join(out))
    return import_torch_trace(tmp_path / "old.log")


def test_log_without_chromium_events_or_metrics(tmp_path: Path) -> None:
    """What torch 2.3 writes: no chromium events, no compilation_metrics, no torch_version."""
    s = _without(tmp_path, b'{"chromium_event"', b'{"compilation_metrics"', b'"torch_version"')
    assert [f.key for f in s.frames] == ["0/0", "1/0", "0/1", "1/1"]
    assert [f.restarts for f in s.frames] == [1, 0, 1, 0]  # from the records' attempt field
    f = s.frames[0]
    assert f.compile_time_s is None and f.guard_count is None and f.restart_reasons == [] and f.status == "ok"
    assert f.name == "f" and f.guards.code_text_lines == 24 and s.run.torch_version is None
    assert any("glog" in w for w in s.capture.warnings) and s.run.start_time.count("-") == 2
    assert s.frames[2].start_s > s.frames[0].start_s


def test_log_like_torch_24s_says_its_graph_breaks_are_unknown(tmp_path: Path) -> None:
    """Torch 2.4 writes compilation metrics but no chromium event or artifact: the graph breaks
    such a log cannot show read as unknown (None, ``?`` in the totals), never as 0."""
    s = _without(tmp_path, b'{"chromium_event"', b'{"artifact"', b'"torch_version"')
    assert OLD_LOG_UNKNOWN in s.capture.warnings and [f.restarts for f in s.frames] == [1, 0, 1, 0]
    assert [f.graph_breaks for f in s.frames] == [None] * 4 and s.graph_breaks is None
    assert run_metrics(s)["graph_breaks"] is None and "graph_breaks" not in run_counts(s)
    assert "? graph breaks" in totals_line(s)
    assert _load("graph_break_recompile.log.gz").graph_breaks == 2  # the same log, whole


def test_directory_and_ranks(tmp_path: Path) -> None:
    old, new = tmp_path / "dedicated_log_torch_trace_a.log", tmp_path / "dedicated_log_torch_trace_b.log"
    shutil.copy(DATA / "one_frame.log", old)
    new.write_bytes(b"".join(_lines("reset.log.gz")))
    os.utime(old, (1e9, 1e9))
    assert is_torch_trace(tmp_path) and is_torch_trace(new) and is_torch_trace(DATA / "restart.log.gz")
    assert len(import_torch_trace(tmp_path).frames) == 2  # the newest log
    sessions = import_torch_trace_ranks(DATA / "ranks")
    assert sorted(sessions) == [0, 1] and [s.run.rank for s in sessions.values()] == [0, 1]
    assert all(s.frames[0].guard_count == 10 for s in sessions.values())
    assert import_torch_trace(DATA / "ranks", rank=1).run.rank == 1
    (w,) = import_torch_trace(DATA / "ranks").capture.warnings
    assert "holds logs of 2 ranks (0, 1)" in w
    with pytest.raises(DynaprofError, match="rank 7"):
        import_torch_trace(DATA / "ranks", rank=7)
    with pytest.raises(DynaprofError, match="no per-rank logs"):
        import_torch_trace_ranks(tmp_path)


def test_not_a_trace(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "session.json").write_text("{}")
    shutil.copy(DATA / "one_frame.log", tmp_path / "run" / "x.log")
    (tmp_path / "notes.txt").write_text("hello\nworld\n" * 100)
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "bin.log").write_bytes(bytes(range(256)) * 1000)
    assert not is_torch_trace(tmp_path / "run") and not is_torch_trace(tmp_path / "notes.txt")
    assert not is_torch_trace(tmp_path / "missing")
    for name in ("notes.txt", "empty.log", "bin.log"):
        with pytest.raises(DynaprofError, match=r"not a TORCH_TRACE log \(no structured records found\)"):
            import_torch_trace(tmp_path / name)
    with pytest.raises(DynaprofError, match="no such file"):
        import_torch_trace(tmp_path / "missing")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(DynaprofError, match=r"no \*\.log file"):
        import_torch_trace(tmp_path / "empty_dir")


def test_parse_graph_break_formats() -> None:
    skip = (
        "Graph break: torch.compile cannot properly resume from this graph break, which results in a skip.\n"
        "torch.compile will skip tracing the frame f (/a/b.py line 3) and fall back to eager.\n"
        "The graph break occurred in the following user code:\n"
        '  File "/a/b.py", line 9, in <module>\n    f(x)\n  File "/a/b.py", line 5, in f\n    g()\n\n'
        "Traceback (most recent call last):\n  File \"/torch/x.py\", line 1, in y\n"
    )
    reason, filename, lineno = parse_graph_break(skip)
    assert (filename, lineno) == ("/a/b.py", 5) and reason.startswith("Graph break: torch.compile cannot")
    assert parse_graph_break("") == ("(no reason given)", None, None)


def _load_bench() -> Any:
    return load_benchmark("bench_import")


def test_streaming_memory_stays_flat(tmp_path: Path) -> None:
    bench = _load_bench()
    log = tmp_path / "big.log"
    size, copies = bench.make_log(log, 12, [DATA / "seed_layers4.log.gz", DATA / "restart.log.gz"])
    import_torch_trace(DATA / "one_frame.log")  # load the modules outside the measurement
    tracemalloc.start()
    try:
        s = import_torch_trace(log)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(s.frames) == copies * 5 and len({f.key for f in s.frames}) == len(s.frames)
    assert peak - kept < 1 << 20  # transient: about one payload chunk, never the file
    assert peak < size / 3  # what is kept: per-frame aggregates (about 16 KB a frame)


# -- fuzzing --------------------------------------------------------------------------------------

_BASE = _lines("one_frame.log")
_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _import_or_error(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    for strict in (False, True):
        try:
            s = import_torch_trace(path, strict=strict)
        except DynaprofError:
            continue
        session_from_text(session_to_text(s))


@_FUZZ
@given(data=st.binary(max_size=4000))
def test_fuzz_random_bytes(tmp_path: Path, data: bytes) -> None:
    _import_or_error(tmp_path / "r.log", data)
    _import_or_error(tmp_path / "g.log", gzip.compress(data)[: max(len(data) // 2, 10)])


_MUTATIONS = st.lists(
    st.tuples(st.integers(0, len(_BASE) - 1), st.sampled_from(["drop", "cut", "dup", "swap", "junk", "flip"]),
              st.integers(0, 10_000), st.binary(min_size=1, max_size=12)),
    min_size=1, max_size=6,
)  # fmt: skip


@_FUZZ
@given(muts=_MUTATIONS)
def test_fuzz_mutated_lines(tmp_path: Path, muts: list[tuple[int, str, int, bytes]]) -> None:
    lines = list(_BASE)
    for i, op, n, junk in muts:
        i %= len(lines)
        line = lines[i]
        if op == "drop":
            del lines[i]
        elif op == "cut":
            lines[i] = line[: n % (len(line) + 1)]
        elif op == "dup":
            lines.insert(i, line)
        elif op == "swap":
            j = n % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "junk":
            k = n % (len(line) + 1)
            lines[i] = line[:k] + junk + line[k:]
        else:  # flip digits and quotes, which keeps JSON nearly valid
            lines[i] = line.replace(b"0", junk[:1] or b"1").replace(b'": ', b'":-', n % 3)
        if not lines:
            lines = [b""]
    _import_or_error(tmp_path / "m.log", b"".join(lines))


# -- real torch, compared with tlparse -----------------------------------------------------------

_RUNS = {
    "seed": [str(ROOT / "samples" / "parametrized_linear.py"), "--backend", "eager", "--layers", "4"],
    "graph_break_recompile": [str(SCRIPTS / "graph_break_recompile.py")],
    "restart": [str(SCRIPTS / "restart.py")],
    "reset": [str(SCRIPTS / "reset.py")],
}


@pytest.fixture(scope="module")
def fresh_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """{name: (log, tlparse output dir)} for each script, run under TORCH_TRACE in parallel."""
    tlparse = shutil.which("tlparse", path=str(VENV_BIN))
    if tlparse is None:
        pytest.skip("tlparse is not installed")
    base = tmp_path_factory.mktemp("torch_trace")
    procs = {}
    for name, argv in _RUNS.items():
        env = {**os.environ, "TORCH_TRACE": str(base / name), "OMP_NUM_THREADS": "1"}
        procs[name] = subprocess.Popen([sys.executable, *argv], env=env, cwd=base,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    out = {}
    for name, p in procs.items():
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-2000:]
        (log,) = (base / name).glob("dedicated_log_torch_trace_*.log")
        tl = base / f"tl_{name}"
        r = subprocess.run([tlparse, str(log), "-o", str(tl), "--overwrite", "--no-browser"],
                           capture_output=True, timeout=60)  # fmt: skip
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        out[name] = (log, tl)
    return out


def _tlparse_frames(tl: Path) -> list[tuple[str, int | None, tuple[str, ...]]]:
    """(trace id, guard count, restart reasons) per compilation_metrics entry of tlparse's raw.jsonl."""
    out = []
    for line in (tl / "raw.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "compilation_metrics" in row:
            m = row["compilation_metrics"]
            attempt = row.get("attempt") or 0
            tid = m["compile_id"] + (f"_{attempt}" if attempt else "")
            out.append((tid, m.get("guard_count"), tuple(m.get("restart_reasons") or ())))
    return out


@pytest.mark.torch
@pytest.mark.versions
@pytest.mark.parametrize("name", list(_RUNS))
def test_agrees_with_tlparse(fresh_logs: dict[str, tuple[Path, Path]], name: str) -> None:
    log, tl = fresh_logs[name]
    s = import_torch_trace(log.parent)
    # torch 2.4's log has no phase events or artifacts: the import says what that leaves unknown
    assert s.capture.warnings == ([] if torch_release() >= (2, 5) else [OLD_LOG_UNKNOWN]) and s.run.complete
    ours = [(f.trace_id, f.guard_count, tuple(f.restart_reasons)) for f in s.frames]
    assert Counter(ours) == Counter(_tlparse_frames(tl))
    # compile directory: every compile id with metrics, as tlparse names them ("[0/0_1]")
    directory = json.loads((tl / "compile_directory.json").read_text())
    with_metrics = Counter(
        key.strip("[]") for key, v in directory.items() for a in v["artifacts"]
        if a["name"].startswith("compilation_metrics")
    )  # fmt: skip
    assert with_metrics == Counter(f.trace_id for f in s.frames)
    # guard code: same size as tlparse's dynamo_cpp_guards_str artifacts (n-th frame of a trace id, n-th file)
    nth: Counter[str] = Counter()
    for f in s.frames:
        arts = sorted((a for a in directory[f"[{f.trace_id}]"]["artifacts"]
                       if a["name"].startswith("dynamo_cpp_guards_str")), key=lambda a: a["number"])  # fmt: skip
        text = (tl / arts[nth[f.trace_id]]["url"]).read_text()
        nth[f.trace_id] += 1
        assert (f.guards.code_text_chars, f.guards.code_text_lines) == (len(text), len(text.splitlines()))
    if name == "reset":
        assert [f.key for f in s.frames] == ["0/0", "0/0#1"]
    if name == "restart":
        assert s.frames[0].trace_id == "0/0_1" and s.frames[0].restart_reasons


# -- logs as they are in the wild: each fixture is made the way it happens -----------


def test_missing_final_newline_is_not_truncation() -> None:
    s = _load("no_final_newline.log")
    base = _load("one_frame.log")
    assert s.run.complete and s.run.end_reason == "exited" and s.capture.warnings == []
    assert [(f.key, f.guard_count, f.compile_time_s) for f in s.frames] == [
        (f.key, f.guard_count, f.compile_time_s) for f in base.frames
    ]
    assert import_torch_trace(DATA / "no_final_newline.log", strict=True).run.complete  # tlparse accepts it too


def test_payload_md5_mismatch_is_counted_and_strict_rejects_it() -> None:
    s = _load("md5_mismatch.log")
    assert s.run.complete  # the payload is complete; it does not match its hash
    assert any("1 payload md5 mismatch" in w and "line 162" in w for w in s.capture.warnings)
    assert s.frames[0].guards.code_text_lines is not None  # still imported
    with pytest.raises(DynaprofError, match=r"md5_mismatch\.log:162: payload md5 mismatch .*\(1 problem in this log"):
        import_torch_trace(DATA / "md5_mismatch.log", strict=True)


def test_invalid_chromium_payload_is_counted_and_strict_rejects_it() -> None:
    s = _load("bad_chromium.log")
    assert any("1 invalid JSON" in w and "line 1: invalid JSON in a 'chromium_event' payload" in w
               for w in s.capture.warnings)  # fmt: skip
    assert "dynamo" not in s.frames[0].phases  # that event is lost, the rest is kept
    assert "entire_frame_compile" in s.frames[0].phases
    with pytest.raises(DynaprofError, match=r"bad_chromium\.log:1: invalid JSON in a 'chromium_event' payload"):
        import_torch_trace(DATA / "bad_chromium.log", strict=True)


def test_strict_reads_the_whole_log_and_counts_every_problem(tmp_path: Path) -> None:
    lines = (DATA / "md5_mismatch.log").read_bytes().splitlines(keepends=True)
    lines.insert(300, b"garbage that is not a record\n")
    (tmp_path / "two.log").write_bytes(b"".join(lines))
    s = import_torch_trace(tmp_path / "two.log")
    assert any("2 malformed" in w and "1 payload md5 mismatch, 1 line that is not a record" in w
               for w in s.capture.warnings)  # fmt: skip
    with pytest.raises(DynaprofError) as e:
        import_torch_trace(tmp_path / "two.log", strict=True)
    assert str(e.value.message).startswith(f"{tmp_path / 'two.log'}:162: payload md5 mismatch")
    assert "(2 problems in this log: 1 payload md5 mismatch, 1 line that is not a record)" in e.value.message
    assert "\n" not in e.value.message


def test_aot_inductor_compile_becomes_a_frame() -> None:
    """torch._inductor.aoti_compile_and_package on CPU: no record has a compile id."""
    s = _load("aot_inductor.log.gz")
    assert s.capture.warnings == [] and s.run.complete
    (f,) = s.frames
    assert (f.key, f.compile_id, f.status) == ("-/-", "-/-", "ok")
    assert f.compile_time_s is not None and f.compile_time_s > 10  # the metrics' window: ~45 s on CPU
    assert f.phases["inductor_compile"] > 0.9 * f.compile_time_s
    from dynaprof.render.terminal import summary_text

    text = summary_text(s)
    assert "no torch.compile compilation happened" not in text and "-/-" in text


def test_compile_id_less_spans_of_a_jit_run_stay_run_spans(tmp_path: Path) -> None:
    s = _load("seed_layers4.log.gz")
    assert all(f.compile_id != "-/-" for f in s.frames)


def test_rank_logs_with_and_without_suffixes(tmp_path: Path) -> None:
    plain = DATA / "ranks_nosuffix"
    assert sorted(import_torch_trace_ranks(plain)) == [0, 1]
    (w,) = import_torch_trace(plain).capture.warnings
    assert "holds logs of 2 ranks (0, 1)" in w
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(DATA / "ranks" / "dedicated_log_torch_trace_rank_0_fixture.log.gz", mixed)
    shutil.copy(plain / "dedicated_log_torch_trace_rank_1.log.gz", mixed)
    rank1 = _lines("ranks_nosuffix/dedicated_log_torch_trace_rank_1.log.gz")
    (mixed / "dedicated_log_torch_trace_rank_2.log").write_bytes(b"".join(rank1))
    (w,) = import_torch_trace(mixed).capture.warnings
    assert "holds logs of 3 ranks (0, 1, 2)" in w
    assert import_torch_trace(mixed, rank=2).run.rank == 2
