"""The capture journal's contract.

* every record a real capture writes is one of ``dynaprof.model.journal``'s types, with no key
  that type lacks and every key it requires, and values of the types it declares;
* the assembler reads every key written (records wrapped in a dict that notes each read);
* older journals still assemble (unknown keys and records ignored, missing keys defaulted);
* one compile read from the journal and from a TORCH_TRACE log gives the same frame (metrics,
  the fields torch's metrics fill, spans, phases): ``ingest.torch_metrics`` is one mapping.
"""

from __future__ import annotations

import gzip
import json
import math
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynaprof.capture.child import ChildConfig
from dynaprof.capture.hooks.metrics import scalar_metrics
from dynaprof.capture.journal import read_journal
from dynaprof.capture.launcher import launch
from dynaprof.ingest.assemble import OWN_METRICS, ParentFacts, _Builder, assemble
from dynaprof.ingest.trace_to_session import OLD_LOG_UNKNOWN, import_torch_trace
from dynaprof.model.capture_options import CaptureOptions
from dynaprof.model.journal import JOURNAL_SCHEMA, RECORD_TYPES, JournalRecord, span_args
from dynaprof.model.session import CompiledFrame, Session
from tests.helpers import JOURNAL, ROOT_DIR, torch_release, typeddict_problems

ROOT = ROOT_DIR
LOGS = ROOT / "tests" / "data" / "torch_trace"

#: a Linear whose weight is parametrized
PARAMETRIZED_LIN = '''
import torch
import torch.nn.utils.parametrize as P


class Sym(torch.nn.Module):
    def forward(self, w):
        return w + w.T


lin = torch.nn.Linear(4, 4)
P.register_parametrization(lin, "weight", Sym())
'''
#: graph break, recompile, reset, parametrized property, a lazy backward compile
SCRIPT = PARAMETRIZED_LIN + '''

def f(x):
    y = lin(x)
    torch._dynamo.graph_break()
    return y.relu() + 1


cf = torch.compile(f, backend="eager")
cf(torch.randn(2, 4))
cf(torch.randn(3, 4))  # a recompile: the batch size changed
torch._dynamo.reset()
cf(torch.randn(2, 4))
g = torch.compile(torch.nn.Linear(4, 4), backend="aot_eager")
g(torch.randn(2, 4)).sum().backward()  # the lazy backward compile
'''
#: torch's Dynamo profiler (``--inline-profile``, inline records); no graph break: with the
#: profiler on, torch 2.13 itself fails on one (AttributeError in mark_bytecode_tracing_stop)
INLINE_SCRIPT = '''
import torch


def helper(x):
    return x.sin() * 2


@torch.compile(backend="eager")
def f(x):
    return helper(x) + helper(x.cos())


f(torch.randn(8))
'''
#: ``dynaprof run --counterfactual``'s second run (folded records)
FOLD_SCRIPT = PARAMETRIZED_LIN + '''torch.compile(lin, backend="eager")(torch.randn(2, 4))
'''
#: record types the capture above must write (unfinished: only when a compile outlives the run;
#: warn: only when something is worth one)
#: (kernel_wait: written only where Inductor's compile workers build kernels; read back from a
#: journal in tests/unit/test_kernel_waits.py, and seen end to end on Inductor there; key_part and
#: cache_lookup: only where Inductor's caches are looked up, checked against their types on a real
#: Inductor capture in tests/e2e/test_cache_real.py; work: only where Inductor compiles a graph, read
#: back end to end in tests/unit/test_kernel_waits.py; kernel: only where Inductor builds a kernel,
#: read back from a real Inductor capture in tests/unit/test_kernel_waits.py; replay_graph: only where
#: Inductor is handed a graph with parametrizations, checked against its type in
#: tests/unit/test_replay_graph.py and replayed end to end in tests/e2e/test_replay.py;
#: replay_skipped: only for a graph that cannot be described, read in tests/unit/test_kernel_split.py)
EXPECTED = set(RECORD_TYPES) - {"unfinished", "warn", "kernel_wait", "key_part", "cache_lookup", "work", "kernel",
                                "replay_graph", "replay_skipped"}
#: records torch 2.4 cannot give, each said in the session's warnings: span (no phase events:
#: "phases not captured"), inline (no Dynamo profiler: "dynamo_profiler not captured")
NOT_ON_TORCH_24 = {"inline", "span"}
#: written keys the assembler may leave unread, with the reason: none
ALLOWED_UNREAD: dict[str, str] = {}


# -- a real capture ---------------------------------------------------------------------------------


class Capture(typing.NamedTuple):
    records: list[dict[str, Any]]
    run_dir: Path
    trace_dir: Path


def _capture(tmp: Path, script: str, **options: Any) -> tuple[list[dict[str, Any]], int]:
    tmp.mkdir(parents=True, exist_ok=True)
    target = tmp / "script.py"
    target.write_text(script)
    journal = tmp / "journal.jsonl"
    journal.write_bytes(b"")
    result = launch(ChildConfig(journal=str(journal), kind="script", target=str(target), args=[],
                                capture=CaptureOptions(**options)))
    records = [r for _, r in read_journal(journal)]
    assert all(r is not None for r in records), "a torn journal line"
    return [r for r in records if r is not None], result.exit_status


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> list[Capture]:
    """The scripts above under the live capture (``dynaprof run``'s child), with every option
    that writes records of its own: cProfile, a TORCH_TRACE log beside the journal, the inline profile."""
    out = []
    tmp = tmp_path_factory.mktemp("journal")
    main, status = _capture(tmp / "main", SCRIPT, cprofile_dir=str(tmp / "main" / "cprofile"),
                            torch_trace_dir=str(tmp / "main" / "trace"))  # fmt: skip
    assert status == 0
    out.append(Capture(main, tmp / "main", tmp / "main" / "trace"))
    inline, status = _capture(tmp / "inline", INLINE_SCRIPT, inline_profile=True, sampler="none")
    assert status == 0
    out.append(Capture(inline, tmp / "inline", tmp / "inline" / "trace"))
    folded, status = _capture(tmp / "fold", FOLD_SCRIPT, fold_parametrizations=True, sampler="none")
    assert status == 0
    out.append(Capture(folded, tmp / "fold", tmp / "fold" / "trace"))
    return out


@pytest.mark.torch
def test_every_record_written_is_of_its_type(captured: list[Capture]) -> None:
    seen: set[str] = set()
    problems: list[str] = []
    for cap in captured:
        for i, r in enumerate(cap.records):
            t = r.get("t")
            if t not in RECORD_TYPES:
                problems.append(f"record {i}: unknown type {t!r}")
                continue
            seen.add(t)
            problems += typeddict_problems(r, RECORD_TYPES[t], f"{t} (record {i})")
    assert problems == [], "\n".join(problems[:40])
    expected = EXPECTED if torch_release() >= (2, 5) else EXPECTED - NOT_ON_TORCH_24
    assert seen >= expected, f"the capture wrote no {sorted(expected - seen)} record"
    if torch_release() < (2, 5):  # what it lacks is said, never silently missing
        warned = " ".join(r["msg"] for cap in captured for r in cap.records if r["t"] == "warn")
        assert "phases not captured" in warned and "dynamo_profiler not captured" in warned, warned
    starts = [r for cap in captured for r in cap.records if r["t"] == "start"]
    assert all(r["schema"] == JOURNAL_SCHEMA for r in starts)


def test_record_types_and_reader_agree() -> None:
    """Each type's ``t`` is its name in ``RECORD_TYPES``, the union holds them all, and the
    assembler has a handler for each (a record nobody reads would not be written)."""
    assert set(typing.get_args(JournalRecord)) == set(RECORD_TYPES.values())
    for name, td in RECORD_TYPES.items():
        assert typing.get_type_hints(td)["t"] == typing.Literal[name]
        assert "t" in td.__required_keys__
        assert callable(getattr(_Builder, f"_on_{name}", None)), f"no reader for {name} records"


# -- what is written is read ------------------------------------------------------------------------


class _Tracked(dict):  # type: ignore[type-arg]
    """A record (or a dict inside one) that notes in ``seen`` each key it was asked for."""

    def __init__(self, data: dict[str, Any], path: str, seen: set[str]) -> None:
        super().__init__({k: _track(v, f"{path}.{k}", seen) for k, v in data.items()})
        self._path, self._seen = path, seen

    def _read(self, key: Any) -> None:
        self._seen.add(f"{self._path}.{key}")

    def _read_all(self) -> None:
        for k in dict.keys(self):
            self._read(k)

    def __getitem__(self, key: Any) -> Any:
        self._read(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._read(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._read(key)
        return super().__contains__(key)

    def pop(self, key: Any, *default: Any) -> Any:
        self._read(key)
        return super().pop(key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._read(key)
        return super().setdefault(key, default)

    def keys(self) -> Any:
        self._read_all()
        return super().keys()

    def items(self) -> Any:
        self._read_all()
        return super().items()

    def values(self) -> Any:
        self._read_all()
        return super().values()

    def __iter__(self) -> Iterator[Any]:
        self._read_all()
        return super().__iter__()

    def copy(self) -> dict[str, Any]:
        self._read_all()
        return dict(super().items())


def _track(value: Any, path: str, seen: set[str]) -> Any:
    if isinstance(value, dict):
        return _Tracked(value, path, seen)
    if isinstance(value, list):
        return [_track(v, f"{path}[]", seen) for v in value]
    return value


def _written(value: Any, path: str, out: set[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(f"{path}.{k}")
            _written(v, f"{path}.{k}", out)
    elif isinstance(value, list):
        for v in value:
            _written(v, f"{path}[]", out)


def _unread(records: list[dict[str, Any]], facts: ParentFacts) -> tuple[set[str], Session]:
    seen: set[str] = set()
    written: set[str] = set()
    tracked = []
    for r in records:
        path = str(r.get("t"))
        _written(r, path, written)
        tracked.append(_Tracked(r, path, seen))
    session = assemble(iter(tracked), facts)
    return written - seen, session


@pytest.mark.torch
def test_the_assembler_reads_every_key_written(captured: list[Capture]) -> None:
    for cap in captured:
        # as `dynaprof report` rebuilds a session from a journal: the end record says how it ended
        facts = ParentFacts(command=["dynaprof", "report"], exit_status=None, run_dir=str(cap.run_dir))
        unread, session = _unread(cap.records, facts)
        assert session.frames and not any("malformed" in w for w in session.capture.warnings)
        unexpected = sorted(k for k in unread if k not in ALLOWED_UNREAD)
        assert unexpected == [], f"written but never read: {unexpected}"


def test_the_unread_key_check_can_fail() -> None:
    """The check above sees a key the assembler skips, and one of a record type it has no reader for."""
    records = [dict(r) for r in JOURNAL]
    records[3] = {**records[3], "colour": "blue"}  # a compile_start key nobody reads
    records.append({"t": "reset", "gen": 1, "ts": 3.2})  # records older journals have: not read
    unread, _ = _unread(records, ParentFacts(command=["dynaprof", "report"], exit_status=None))
    assert {"compile_start.colour", "reset.gen", "reset.ts"} <= unread
    assert "compile_end.graph_break_reasons[].count" in unread  # the graph-break count of older journals


# -- older journals ---------------------------------------------------------------------------------


def test_older_journals_still_assemble() -> None:
    """A journal from before the schema (helpers.JOURNAL: exc_type, graph-break counts, the start's
    kind, a reset record) plus keys and records this version does not know, and records missing
    their optional keys: assembled without a malformed-record warning."""
    records: list[dict[str, Any]] = [dict(r) for r in JOURNAL]
    records.insert(3, {"t": "reset", "gen": 1, "ts": 2.0})
    records.insert(3, {"t": "from_the_future", "x": 1})
    records[0] = {**records[0], "new_key": [1, 2]}
    records.insert(-1, {"t": "compile_start", "key": "2/0", "cid": "2/0", "tid": 1, "ts": 3.25, "name": "g",
                        "file": "/w/tiny.py", "line": 9})  # no gen, thread_name, call_site, kind: defaults
    records.insert(-1, {"t": "metrics", "key": "2/0", "m": {"guard_count": 3}})  # no tid, no attempt
    records.insert(-1, {"t": "compile_end", "key": "2/0", "duration": 0.01})  # only what it must have
    records.insert(-1, {"t": "sampler", "source": "builtin", "samples": 33, "seconds": 0.05})  # no errors/notes
    s = assemble(iter(records), ParentFacts(command=["dynaprof", "report"], exit_status=None))
    assert not any("malformed" in w or "newer dynaprof" in w for w in s.capture.warnings), s.capture.warnings
    f0 = next(f for f in s.frames if f.key == "0/0")
    assert f0.graph_break_reasons[0].reason == "graph_break()" and f0.graph_breaks == 1
    assert f0.metrics["window_s"] == 0.189 and f0.guard_count == 11 and f0.restart_reasons == ["graph_break"]
    g = next(f for f in s.frames if f.key == "2/0")
    assert (g.generation, g.thread_name, g.call_site, g.kind) == (0, "", [], "forward")
    assert g.guard_count == 3 and g.status == "ok" and g.compile_time_s == 0.01 and g.graph_break_reasons == []
    assert s.samples is not None and s.samples.errors == 0


def test_a_newer_journal_says_so() -> None:
    records: list[dict[str, Any]] = [dict(r) for r in JOURNAL]
    records[0] = {**records[0], "schema": JOURNAL_SCHEMA + 1}
    s = assemble(iter(records), ParentFacts(command=["dynaprof", "report"], exit_status=None))
    assert any(f"journal schema {JOURNAL_SCHEMA + 1}" in w for w in s.capture.warnings)


# -- one mapping: the same compile from the journal and from a TORCH_TRACE log -------------------------

#: CompiledFrame fields torch's metrics and phase spans fill
FIELDS = ("compile_time_s", "status", "fail_type", "fail_reason", "fail_filename", "fail_lineno", "restart_reasons",
          "recompile_reason", "guard_count", "graph_op_count", "graph_node_count", "graph_input_count", "ir_count",
          "kind", "restarts", "cache")  # fmt: skip


def _differences(j: CompiledFrame, t: CompiledFrame, same_clock: bool) -> list[str]:
    """How the journal's frame ``j`` and the log's ``t`` differ (times: within 2 µs of rounding)."""
    out = [f"{n}: {getattr(j, n)!r} vs {getattr(t, n)!r}" for n in FIELDS if getattr(j, n) != getattr(t, n)]
    own = {k: v for k, v in j.metrics.items() if k not in OWN_METRICS}
    if own != t.metrics:
        out.append(f"metrics: {sorted(set(own.items()) ^ set(t.metrics.items()))[:6]}")
    for name in ("count", "shape_env_count", "latency_us"):
        if getattr(j.guards, name) != getattr(t.guards, name):
            out.append(f"guards.{name}: {getattr(j.guards, name)} vs {getattr(t.guards, name)}")
    if [(s.name, s.args) for s in j.spans] != [(s.name, s.args) for s in t.spans]:
        out.append(f"spans: {[(s.name, s.args) for s in j.spans]} vs {[(s.name, s.args) for s in t.spans]}")
    else:
        for a, b in zip(j.spans, t.spans, strict=True):
            if not math.isclose(a.duration_s, b.duration_s, abs_tol=2e-6) or (
                same_clock and not math.isclose(a.start_s, b.start_s, abs_tol=2e-6)
            ):
                out.append(f"span {a.name}: {a.start_s}+{a.duration_s} vs {b.start_s}+{b.duration_s}")
    # a phase sums its spans, each rounded to the µs in the journal
    spans_of = {k: sum(s.name == k for s in j.spans) for k in j.phases}
    if j.phases.keys() != t.phases.keys() or any(
        not math.isclose(j.phases[k], t.phases[k], abs_tol=1e-6 * (spans_of[k] + 1)) for k in j.phases
    ):
        out.append(f"phases: {j.phases} vs {t.phases}")
    timed = [[(a.index, a.duration_s) for a in f.attempts if a.source == "timed" and a.duration_s is not None]
             for f in (j, t)]  # fmt: skip
    if len(timed[0]) != len(timed[1]) or any(
        x[0] != y[0] or not math.isclose(x[1], y[1], abs_tol=2e-6) for x, y in zip(*timed, strict=False)
    ):
        out.append(f"attempts: {j.attempts} vs {t.attempts}")
    return out


def _log_records(path: Path) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(type, envelope, payload) of each record of a TORCH_TRACE log."""
    data = path.read_bytes()
    text = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()
    current: list[Any] | None = None
    for line in text.splitlines():
        if line.startswith("\t"):
            assert current is not None
            current[2].append(line[1:])
            continue
        if current is not None:
            yield current[0], current[1], "\n".join(current[2])
        envelope = json.loads(line.split("] ", 1)[1])
        current = [next(iter(envelope)), envelope, []]
    if current is not None:
        yield current[0], current[1], "\n".join(current[2])


def _journal_of_log(path: Path) -> list[dict[str, Any]]:
    """The journal the live capture would have written for the compiles of a TORCH_TRACE log
    (frame compiles and lazy backward compiles; one generation, no compiled autograd): the same
    events in ``span`` records (end arguments through the writer's ``span_args``), the same
    metrics through the writer's ``scalar_metrics``."""
    records: list[dict[str, Any]] = [
        {"t": "start", "schema": JOURNAL_SCHEMA, "pid": 1, "argv": [], "cwd": "", "python": "", "platform": "",
         "hostname": "", "epoch_ns": 0, "dynaprof": "", "target": str(path), "rank": None, "world_size": None,
         "tid": 1},
    ]  # fmt: skip
    origin: float | None = None
    opened: dict[str, dict[str, Any]] = {}  # key -> its compile_start
    attempts: dict[str, int] = {}
    backward: dict[str, str] = {}  # compile id -> the key of its backward compile in progress
    names: dict[str, list[Any]] = {}  # key -> its metrics' [co_name, co_filename, co_firstlineno]
    last_ts: dict[str, float] = {}

    def open_frame(key: str, cid: str, ts: float, kind: str, fwd: str | None) -> None:
        if key not in opened:
            rec = {"t": "compile_start", "key": key, "cid": cid, "gen": 0, "tid": 1, "thread_name": "", "ts": ts,
                   "name": "?", "file": "?", "line": 0, "call_site": [], "kind": kind}  # fmt: skip
            if fwd is not None:
                rec["fwd"] = fwd
            opened[key] = rec
            records.append(rec)

    for etype, env, payload in _log_records(path):
        if "frame_id" not in env or "compiled_autograd_id" in env:
            continue
        cid = f"{env['frame_id']}/{env['frame_compile_id']}"
        if etype == "chromium_event":
            ev = json.loads(payload)
            name, ph, args = ev["name"], ev["ph"], ev.get("args") or {}
            if ph not in ("B", "E"):
                continue
            origin = ev["ts"] if origin is None else origin
            ts = round((ev["ts"] - origin) / 1e6, 6)
            if name == "entire_backward_compile" and ph == "B":
                backward[cid] = f"{cid}:bw"
            key = backward.get(cid, cid)
            open_frame(key, cid, ts, "backward" if key != cid else "forward", cid if key != cid else None)
            rec: dict[str, Any] = {"t": "span", "name": name, "ph": ph, "tid": 1, "ts": ts, "key": key}
            if ph == "E" and (kept := span_args(name, args)):
                rec["args"] = kept
            records.append(rec)
            last_ts[key] = ts
            if ph == "B" and name.startswith("compile_attempt_"):
                attempts[key] = max(attempts.get(key, 0), int(name[16:]))
            if name == "entire_backward_compile" and ph == "E":
                backward.pop(cid)
        elif etype in ("compilation_metrics", "bwd_compilation_metrics"):
            m = env[etype]
            key = f"{cid}:bw" if etype.startswith("bwd") else cid
            open_frame(key, cid, last_ts.get(key, 0.0), "backward" if key != cid else "forward", None)
            if m.get("co_name") is not None:
                names[key] = [m["co_name"], m["co_filename"], m["co_firstlineno"]]
            records.append({"t": "metrics", "key": key, "m": scalar_metrics(types.SimpleNamespace(**m))})
    for key, rec in opened.items():
        name, file, line = names.get(key) or names.get(key.split(":")[0]) or ["?", "?", 0]
        rec.update(name=name, file=file, line=line)
        records.append({"t": "compile_end", "key": key, "duration": round(last_ts.get(key, rec["ts"]) - rec["ts"], 6),
                        "attempt": attempts.get(key, 0), "exc": None, "graph_breaks": None, "graph_break_sites": [],
                        "inlines": None, "inlines_final": None, "recompile_reasons": None, "props": []})  # fmt: skip
    records.append({"t": "end", "exit_status": 0, "reason": "exited", "ts": max(last_ts.values(), default=0.0)})
    return records


@pytest.mark.parametrize(
    "log", ["one_frame.log", "graph_break_recompile.log.gz", "failing_backend.log.gz", "training_step.log.gz"]
)
def test_a_logs_compiles_read_the_same_from_a_journal(log: str) -> None:
    """Real torch metrics and phase events (a committed log): written as the live capture writes
    them, then assembled, they give the frames the TORCH_TRACE import gives."""
    path = LOGS / log
    records = _journal_of_log(path)
    for r in records:  # what the converter wrote is what the capture may write
        problems = typeddict_problems(r, RECORD_TYPES[r["t"]], r["t"])
        assert problems == [], problems
    journal = assemble(iter(records), ParentFacts(command=["test"], exit_status=None, sampler="none"))
    trace = import_torch_trace(path)
    j = {f.key: f for f in journal.frames}
    t = {f.key: f for f in trace.frames if f.key in j}
    assert set(j) == set(t) and len(t) >= 1
    assert any(f.metrics for f in t.values())
    problems = {k: d for k in sorted(j) if (d := _differences(j[k], t[k], same_clock=True))}
    assert problems == {}


def test_the_same_compile_check_can_fail() -> None:
    path = LOGS / "one_frame.log"
    records = _journal_of_log(path)
    for r in records:
        if r["t"] == "metrics":
            r["m"]["backend_compile_time_s"] = 1e-9  # as if one importer read the field differently
            r["m"]["guard_count"] = 1
    j = assemble(iter(records), ParentFacts(command=["test"], exit_status=None, sampler="none")).frames[0]
    d = _differences(j, import_torch_trace(path).frames[0], same_clock=True)
    assert any(x.startswith("metrics") for x in d) and any(x.startswith("guard_count") for x in d)


@pytest.mark.torch
def test_a_live_compile_reads_the_same_from_its_journal_and_its_torch_trace_log(captured: list[Capture]) -> None:
    """The same run, recorded both ways (``dynaprof run --torch-trace``): every compile's frame
    from the journal equals its frame from the log, and both key them alike (after a reset, "#<gen>"
    only where torch handed out a compile id again)."""
    cap = captured[0]
    facts = ParentFacts(command=["dynaprof", "report"], exit_status=None, run_dir=str(cap.run_dir))
    journal = assemble(iter(cap.records), facts)
    trace = import_torch_trace(cap.trace_dir)

    def by_id(s: Session) -> dict[tuple[str, int, str], CompiledFrame]:
        return {(f.compile_id, f.generation, f.kind): f for f in s.frames}

    j, t = by_id(journal), by_id(trace)
    assert {k[2] for k in j} == {"forward", "backward"} and {k[1] for k in j} == {0, 1}
    if torch_release() < (2, 5):  # torch 2.4 logs nothing of a lazy backward compile: the import says so
        assert OLD_LOG_UNKNOWN in trace.capture.warnings and {k[2] for k in t} == {"forward"}
        j = {k: f for k, f in j.items() if k[2] == "forward"}
    else:
        assert any(f.properties for f in j.values())  # (torch 2.4 traces no property)
    assert set(j) == set(t) and len(j) >= (6 if torch_release() >= (2, 5) else 3)
    assert sorted(f.key for f in j.values()) == sorted(f.key for f in t.values())
    assert any(f.restarts for f in j.values())
    if torch_release() < (2, 5):  # no recompile reasons in a 2.4 log: unknown there, never another reason
        assert all(f.recompile_reason is None for f in t.values()) and any(f.recompile_reason for f in j.values())
        for f in j.values():
            f.recompile_reason = None
    problems = {k: d for k in sorted(j) if (d := _differences(j[k], t[k], same_clock=False))}
    assert problems == {}
