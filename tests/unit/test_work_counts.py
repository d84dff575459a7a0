"""Exact work counts without a real compile: the ops after AOT autograd (``aot_graph`` records, and
schemas 5 and 6's Inductor ``fx_ops``) summed per window, unknown never 0; the compiler wrappers that count
them leave the compilers, their types and torch's objects as they were; the spread of repeated runs'
counts as ``benchmarks/bench_counts.py`` tabulates it."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, cast

from dynaprof.capture.hooks import aot_graphs
from dynaprof.ingest.assemble import ParentFacts, assemble
from dynaprof.model.journal import PROVENANCE_HOOK
from tests.conftest import load_benchmark
from tests.factories import kernel

FACTS = ParentFacts(command=["dynaprof", "run", "x.py"], exit_status=0)


def _journal(*work: dict[str, Any], schema: int = 7) -> list[dict[str, Any]]:
    def window(key: str, ts: float, kind: str = "forward") -> list[dict[str, Any]]:
        start = {"t": "compile_start", "key": key, "cid": "0/0", "tid": 1, "ts": ts, "name": "f",
                 "file": "/w/x.py", "line": 3, "call_site": []}
        if kind == "backward":
            start.update(kind="backward", fwd="0/0")
        return [start, *[w for w in work if w["key"] == key],
                {"t": "compile_end", "key": key, "ts": ts + 1, "duration": 1.0, "attempt": 0}]

    return [
        {"t": "start", "pid": 1, "target": "x.py", "epoch_ns": 0, "schema": schema},
        {"t": "hooks", "items": ["compile_windows", "work_counts", "aot_graphs"]},
        *window("0/0", 0.5), *window("0/0:bw", 2.0, "backward"), *window("1/0", 4.0),
        {"t": "end", "exit_status": 0, "reason": "exited", "ts": 6.0},
    ]


def _counts(records: list[dict[str, Any]]) -> dict[str, tuple[int | None, int | None, int | None]]:
    s = assemble(records, FACTS)
    return {f.key: (f.aot_graph_ops, f.inductor_ir_nodes, f.inductor_kernels) for f in s.frames}


def test_aot_graph_ops_sum_per_window_for_any_backend() -> None:
    # aot_eager: a forward and a graph break's second graph in 0/0, the lazy backward in its own window
    got = _counts(_journal({"t": "aot_graph", "key": "0/0", "ops": 5}, {"t": "aot_graph", "key": "0/0", "ops": 3},
                           {"t": "aot_graph", "key": "0/0:bw", "ops": 18}))
    assert got == {"0/0": (8, None, None), "0/0:bw": (18, None, None), "1/0": (None, None, None)}


def test_inductor_counts_beside_the_aot_ops_and_one_unknown_graph_makes_the_sum_unknown() -> None:
    got = _counts(_journal(
        {"t": "aot_graph", "key": "0/0", "ops": 5}, {"t": "work", "key": "0/0", "ir_nodes": 4, "kernels": 2},
        {"t": "aot_graph", "key": "0/0:bw", "ops": 14}, {"t": "work", "key": "0/0:bw", "ir_nodes": None, "kernels": 3},
        {"t": "aot_graph", "key": "1/0", "ops": 2}, {"t": "aot_graph", "key": "1/0", "ops": None},
    ))  # fmt: skip
    assert got == {"0/0": (5, 4, 2), "0/0:bw": (14, None, 3), "1/0": (None, None, None)}
    bad = _counts(_journal({"t": "aot_graph", "key": "0/0", "ops": -1},
                           {"t": "aot_graph", "key": "0/0:bw", "ops": True}))
    assert bad["0/0"][0] is None and bad["0/0:bw"][0] is None  # never a negative or a bool as a count


def test_a_schema_5_or_6_journal_still_reads_inductors_fx_ops_as_the_aot_ops() -> None:
    got = _counts(_journal({"t": "work", "key": "0/0", "fx_ops": 5, "ir_nodes": 4, "kernels": 2},
                           {"t": "work", "key": "0/0:bw", "fx_ops": 14, "ir_nodes": 9, "kernels": 3}, schema=5))
    assert got == {"0/0": (5, 4, 2), "0/0:bw": (14, 9, 3), "1/0": (None, None, None)}


def test_kernels_defined_count_each_kernel_record_of_the_compile_and_unknown_is_never_0() -> None:
    fns = {"t": "fn", "items": [[90 + i, f"cpp_fused_{i}", "", 0, "cause:kernel"] for i in range(3)]}
    work = [{"t": "work", "key": k, "ir_nodes": 9, "kernels": n} for k, n in (("0/0", 7), ("0/0:bw", 2), ("1/0", 0))]
    kernels = [kernel(key, 90 + i, f"cpp_fused_{i}", 2, 0, -1, -1) for i, key in enumerate(("0/0", "0/0", "0/0:bw"))]
    records = _journal(*work)
    hooks = records[1]
    hooks["items"].append(PROVENANCE_HOOK)  # the hook that writes kernel records was installed
    records[1:1] = [fns, *cast(list[dict[str, Any]], kernels)]
    s = assemble(records, FACTS)
    # every body generated, against each kernel once; 1/0 built none (a cache hit: 0, known)
    assert {f.key: (f.inductor_kernels, f.kernels_defined) for f in s.frames} == {
        "0/0": (7, 2), "0/0:bw": (2, 1), "1/0": (0, 0)}
    hooks["items"].remove(PROVENANCE_HOOK)
    assert [f.kernels_defined for f in assemble(records, FACTS).frames] == [None, None, None]  # not recorded


class _Recorder:
    """The two things the hook asks of a recorder: the window on this thread, and emit."""

    def __init__(self, key: str | None) -> None:
        self.key, self.records = key, []  # type: list[dict[str, Any]]

    def current(self, tid: int) -> Any:
        assert tid == threading.get_ident()
        return None if self.key is None else SimpleNamespace(key=self.key)

    def emit(self, rec: dict[str, Any]) -> None:
        self.records.append(rec)


class _Graph:
    def __init__(self, *ops: str) -> None:
        self.graph = SimpleNamespace(nodes=[SimpleNamespace(op=o) for o in ops])


class _Serializable:
    """Stands for torch's ``SerializableAOTDispatchCompiler``: a type AOT autograd's cache checks."""

    def __init__(self, fn: Any) -> None:
        self.output_code_ty, self.compiler_fn = object, fn

    def __call__(self, gm: Any, inputs: Any) -> Any:
        return self.compiler_fn(gm, inputs)


def test_wrapped_compilers_count_each_graph_and_compile_it_as_torch_would() -> None:
    calls: list[tuple[Any, Any]] = []

    def boxed_nop(gm: Any, inputs: Any) -> str:
        calls.append((gm, inputs))
        return "compiled"

    boxed_nop._is_wrapped_bw_compiler = True  # type: ignore[attr-defined]
    rec = _Recorder("0/0")
    gm, inputs = _Graph("placeholder", "call_function", "call_function", "get_attr", "output"), [1, 2]
    plain = aot_graphs._counting(boxed_nop, rec, _Serializable)  # type: ignore[arg-type]
    assert plain(gm, inputs) == "compiled" and calls == [(gm, inputs)]
    assert plain.__name__ == "boxed_nop" and plain._is_wrapped_bw_compiler is True  # torch's marks kept
    original = _Serializable(boxed_nop)
    twin = aot_graphs._counting(original, rec, _Serializable)  # type: ignore[arg-type]
    assert type(twin) is _Serializable and twin is not original and original.compiler_fn is boxed_nop
    rec.key = "0/0:bw"  # a lazy backward: counted in the window it compiles in, not its forward's
    assert twin(gm, inputs) == "compiled" and calls[-1] == (gm, inputs)
    assert rec.records == [{"t": "aot_graph", "key": "0/0", "ops": 2}, {"t": "aot_graph", "key": "0/0:bw", "ops": 2}]
    rec.key = None  # outside any window: compiled, nothing recorded
    assert plain(gm, inputs) == "compiled" and len(rec.records) == 2
    assert aot_graphs.graph_ops(object()) is None  # no graph: unknown, not 0


def test_the_benchmark_reports_a_spread_honestly() -> None:
    bench = load_benchmark("bench_counts")
    runs = [{"fx_nodes": 10, "aot_ops_fw": 5, "guards": 7}, {"fx_nodes": 10, "aot_ops_fw": 6, "guards": None},
            {"fx_nodes": 10, "aot_ops_fw": 5, "guards": 7}]
    rows = dict((name, cells) for name, *cells in bench.spread(runs))
    assert rows["fx_nodes"] == ["10", "10", "identical"]
    assert rows["aot_ops_fw"] == ["5", "6", "SPREAD 1"]
    assert rows["guards"] == ["7", "7", "unknown in 1 of 3"]
