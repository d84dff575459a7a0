"""Kernel code cache lookups: the hooks on a stand-in ``AsyncCompile`` and ``codecache`` (hit,
miss in a worker, miss in process, already loaded; torch's key; the key's components), the
journal's lookups with their measured build seconds, and what the analysis makes of them. The
real caches: tests/e2e/test_cache_real.py (``test_kernels_*``)."""

from __future__ import annotations

import hashlib
import os
import threading
import types
from pathlib import Path
from typing import Any

from dynaprof.analysis.cache_misses import kernel_caches, kernels_served, misses_between
from dynaprof.capture import kernel_builds, kernel_cache
from dynaprof.ingest.assemble import ParentFacts, assemble
from dynaprof.ingest.cache_keys import KERNEL_NOTE, TraceLookups
from dynaprof.model.cache_keys import (
    KERNEL_IN_PROCESS,
    KERNEL_IN_WORKER,
    KERNEL_LOADED,
    KERNEL_ON_DISK,
    ComponentTable,
    ParsedLookup,
)
from dynaprof.model.session import Session
from tests.factories import frame, make_session
from tests.helpers import JOURNAL

CMD = ("g++ i -D TORCH_INDUCTOR_CPP_WRAPPER -D CPU_CAPABILITY_AVX512 -O3 -DNDEBUG -fno-trapping-math -march=native "
       "-shared -fPIC -Wall -std=c++20 -I/venv/torch/include -mavx512f -mavx512dq -mfma -o o.so -ltorch "
       "-L/venv/torch/lib")  # fmt: skip


# -- the key's components ------------------------------------------------------------------------


def test_the_compile_command_is_found_in_what_torch_hashes_with_the_source() -> None:
    assert kernel_cache.command_of(f"None {CMD}", None) == CMD  # 2.13, no optimized part
    assert kernel_cache.command_of(f"int opt() {{}} {CMD}", "int opt() {}") == CMD  # 2.13, an optimized part
    assert kernel_cache.command_of(repr(CMD), None) == CMD  # 2.4-2.6: the command's repr


def test_the_command_is_split_so_a_changed_part_is_named() -> None:
    parts = {c.name: c for c in kernel_cache.command_components(CMD)}
    assert parts["compile_command[compiler]"].value == "g++"
    assert parts["compile_command[ISA flags]"].value == \
        "-D CPU_CAPABILITY_AVX512 -march=native -mavx512f -mavx512dq -mfma"  # fmt: skip
    assert parts["compile_command[optimization flags]"].value == "-O3 -fno-trapping-math"
    assert "-I/venv/torch/include" in parts["compile_command[paths]"].value
    avx2 = {c.name: c for c in kernel_cache.command_components(
        CMD.replace("-mavx512f -mavx512dq -mfma", "-mavx2 -mfma").replace("AVX512", "AVX2"))}
    changed = [n for n in parts if parts[n].hash != avx2[n].hash]
    assert changed == ["compile_command[ISA flags]"]
    comps = kernel_cache.kernel_components("  src  ", f"None {CMD}", None)
    stripped = kernel_cache.kernel_components("src", "x", None)[0]
    assert comps[0].name == "kernel_source" and comps[0].hash == stripped.hash  # torch hashes the stripped source


# -- the hooks, on a stand-in AsyncCompile and codecache -----------------------------------------


class _Future:
    def __init__(self, task: Any = None) -> None:
        self.task = task

    def result(self) -> Any:
        return self.task() if self.task is not None else None


class _Builder:
    def __init__(self, target: str) -> None:
        self.target = target

    def get_target_file_path(self) -> str:
        return self.target


class _Stand:
    """Torch's kernel code cache as ``CppCodeCache.load_async`` runs it: ``write`` gives the key,
    a binary already there (or loaded) is not built, else a worker (or, with one thread,
    ``_worker_compile_cpp`` in process) builds it."""

    def __init__(self, root: Path, lookups: kernel_cache.KernelLookups) -> None:
        self.root, self.threads = root, 2
        self.cache: dict[str, Any] = {}  # CppCodeCache.cache: key -> loader
        self.write = lookups.wrap_write(self._write)
        self.worker = lookups.wrap_worker(self._worker)
        lookups.loaders = [self]

    def _write(self, content: str, extension: str, extra: str = "") -> tuple[str, str]:
        key = "c" + hashlib.sha256(f"{content.strip()}|{extra}".encode()).hexdigest()[:20]
        return key, str(self.root / f"{key}.{extension}")

    def _worker(self, lock_path: str, builders: list[_Builder]) -> None:
        for b in builders:
            if not os.path.exists(b.get_target_file_path()):
                Path(b.get_target_file_path()).write_text("binary")

    def load_async(self, source: str, submit: Any) -> Any:
        self.write("isa probe", "cpp", extra="gcc -v")  # the first kernel's ISA probe, before its own key
        key, _path = self.write(source, "main.cpp", extra=f"None {CMD}")
        target = str(self.root / f"{key}.so")
        if key not in self.cache:
            future = None
            if self.threads == 1:
                self.worker("lock", [_Builder(target)])
            elif not os.path.exists(target):
                future = submit(lambda: self._worker("lock", [_Builder(target)]))
            self.cache[key] = lambda: (future.result() if future else None, target)[1]
        return self.cache[key]


class _Recorder:
    def __init__(self) -> None:
        self.window = types.SimpleNamespace(key="0/0", kernel_pending=set(), kernel_worker_s={}, kernel_parts={},
                                            kernel_ids={})  # fmt: skip
        self.causes = types.SimpleNamespace(enter=lambda tid, fid: 0, exit=lambda tid, depth: None)
        self.records: list[Any] = []
        self.cache_lookup = None

    def current(self, tid: int) -> Any:
        return self.window

    def _cause_id(self, key: Any) -> int:
        return 0

    def emit(self, record: Any) -> None:
        self.records.append(record)

    def emit_functions(self) -> None: ...

    def warn(self, message: str) -> None:
        self.records.append({"t": "warn", "msg": message})


def _hooked(tmp_path: Path) -> tuple[Any, _Stand, list[tuple[str | None, ParsedLookup]], _Recorder]:
    got: list[tuple[str | None, ParsedLookup]] = []
    rec = _Recorder()
    lookups = kernel_cache.KernelLookups(lambda lk, key: got.append((key, lk)), rec.warn)
    stand = _Stand(tmp_path, lookups)
    builds = kernel_builds.KernelBuilds(rec)  # type: ignore[arg-type]
    builds.lookups = lookups

    class AsyncCompile:
        def cpp(self, source_code: str) -> Any:
            get = stand.load_async(source_code, self.submit)
            return get() if stand.threads == 1 else _Future(get)

        def triton(self, kernel_name: str, source_code: str) -> Any:
            return _Future()

        @classmethod
        def submit(cls, task: Any) -> Any:
            return _Future(task)

    AsyncCompile.cpp = builds.builder("cpp", AsyncCompile.__dict__["cpp"])  # type: ignore[method-assign]
    AsyncCompile.triton = builds.builder("triton", AsyncCompile.__dict__["triton"])  # type: ignore[method-assign]
    AsyncCompile.submit = classmethod(builds.submit(AsyncCompile.__dict__["submit"].__func__))  # type: ignore[method-assign,assignment]
    return AsyncCompile(), stand, got, rec


def test_a_kernel_built_in_a_worker_misses_and_then_hits_on_disk(tmp_path: Path) -> None:
    async_compile, stand, got, _ = _hooked(tmp_path)
    cpp_fused_relu_0 = async_compile.cpp("void kernel() {}")
    cpp_fused_relu_0.result()  # the worker builds the binary
    stand.cache.clear()  # a new process: nothing loaded, the binary on disk
    cpp_fused_relu_0 = async_compile.cpp("void kernel() {}")
    assert [(k, lk.cache, lk.outcome, lk.reason, lk.kernel) for k, lk in got] == [
        ("0/0", "cpp_kernel", "miss", KERNEL_IN_WORKER, "cpp_fused_relu_0"),
        ("0/0", "cpp_kernel", "hit", KERNEL_ON_DISK, "cpp_fused_relu_0"),
    ]
    miss, hit = got[0][1], got[1][1]
    assert miss.key and miss.key == hit.key and miss.key != stand._write("isa probe", "cpp", "gcc -v")[0]
    assert [c.name for c in miss.components][:2] == ["kernel_source", "compile_command[compiler]"]
    assert miss.time_saved_s is None and hit.time_saved_s is None  # torch says none per kernel
    cpp_fused_relu_0 = async_compile.cpp("void kernel() {}")  # loaded by this process now
    assert got[2][1].outcome == "hit" and got[2][1].reason == KERNEL_LOADED


def test_a_kernel_built_in_process_misses_and_then_hits(tmp_path: Path) -> None:
    async_compile, stand, got, _ = _hooked(tmp_path)
    stand.threads = 1
    cpp_fused_mul_0 = async_compile.cpp("void mul() {}")
    stand.cache.clear()
    cpp_fused_mul_0 = async_compile.cpp("void mul() {}")
    assert [(lk.outcome, lk.reason, lk.kernel) for _, lk in got] == [
        ("miss", KERNEL_IN_PROCESS, "cpp_fused_mul_0"), ("hit", KERNEL_ON_DISK, "cpp_fused_mul_0")]
    assert cpp_fused_mul_0 is not None


def test_nothing_is_recorded_where_the_outcome_is_not_known(tmp_path: Path) -> None:
    async_compile, stand, got, rec = _hooked(tmp_path)
    stand.threads = 1
    stand.worker = stand._worker  # a torch whose in-process build could not be hooked
    cpp_fused_add_0 = async_compile.cpp("void add() {}")
    assert got == [] and cpp_fused_add_0 is not None
    triton_poi_fused_0 = async_compile.triton("triton_poi_fused_0", "src")
    triton_poi_fused_1 = async_compile.triton("triton_poi_fused_1", "src")
    assert got == [] and triton_poi_fused_0 is not None and triton_poi_fused_1 is not None
    assert len([r for r in rec.records if r["t"] == "warn" and "Triton" in r["msg"]]) == 1  # said once


def test_the_hooks_pass_through_on_other_threads_and_outside_a_builder_call(tmp_path: Path) -> None:
    _, stand, got, _ = _hooked(tmp_path)
    key, path = stand.write("void k() {}", "main.cpp", extra="x")
    assert key.startswith("c") and path.endswith(".main.cpp") and got == []
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(stand.worker("lock", [_Builder(str(tmp_path / "b.so"))])))
    t.start()
    t.join()
    assert out == [None] and (tmp_path / "b.so").exists()


# -- the journal, and the analysis ---------------------------------------------------------------


def _journal_with(lookups: list[dict[str, Any]], extra: list[dict[str, Any]]) -> Session:
    records: list[dict[str, Any]] = [dict(r) for r in JOURNAL]
    at = next(i for i, r in enumerate(records) if r["t"] == "metrics")
    parts = [{"t": "key_part", "items": [[0, "kernel_source", "s1", ""], [1, "compile_command[ISA flags]", "i1",
                                                                          "-mavx512f"]]}]  # fmt: skip
    records[at:at] = parts + extra + lookups
    return assemble(iter(records), ParentFacts(command=["dynaprof", "run", "tiny.py"], exit_status=0))


def _kl(name: str, outcome: str, reason: str) -> dict[str, Any]:
    return {"t": "cache_lookup", "key": "0/0", "cache": "cpp_kernel", "outcome": outcome, "parts": [0, 1],
            "nodes": [], "cache_key": f"key-{name}", "reason": reason, "kernel": name}  # fmt: skip


def test_journal_kernel_lookups_get_their_worker_measured_build_seconds() -> None:
    fn = {"t": "fn", "items": [[90, "cpp_fused_a_0", "", 0, "cause:kernel"], [91, "cpp_fused_b_1", "", 0,
                                                                                "cause:kernel"]]}  # fmt: skip
    kernels = [{"t": "kernel", "key": "0/0", "cause": c, "name": n, "nodes": 1, "param_nodes": 0, "param": -1,
                "rest": -1} for c, n in ((90, "cpp_fused_a_0"), (91, "cpp_fused_b_1"))]  # fmt: skip
    wait = {"t": "kernel_wait", "key": "0/0", "cause": 90, "seconds": 1.0, "unmeasured": 0,
            "shares": [[90, 0.75], [91, 0.0]]}  # fmt: skip
    s = _journal_with([_kl("cpp_fused_a_0", "miss", KERNEL_IN_WORKER), _kl("cpp_fused_b_1", "hit", KERNEL_ON_DISK)],
                      [fn, *kernels, wait])  # fmt: skip
    got = [(lk.cache, lk.outcome, lk.kernel, lk.key, lk.built_s) for lk in s.cache_keys.lookups if lk.kernel]
    assert got == [("cpp_kernel", "miss", "cpp_fused_a_0", "key-cpp_fused_a_0", 0.75),
                   ("cpp_kernel", "hit", "cpp_fused_b_1", "key-cpp_fused_b_1", None)]  # fmt: skip
    assert [c.name for c in s.cache_keys.parts(s.cache_keys.lookups[1])] == ["kernel_source",
                                                                            "compile_command[ISA flags]"]
    (k,) = kernel_caches(s)
    assert (k.kernels, k.on_disk, k.built, k.built_s) == (2, 1, 1, 0.75)
    assert k.line() == "C++ kernel code cache: 1 of 2 kernels on disk, 1 built in 0.75 s; time saved not measured"


def test_an_older_journal_s_lookups_have_no_kernel() -> None:
    lk = _kl("cpp_fused_a_0", "miss", KERNEL_IN_WORKER)
    del lk["kernel"]
    lk["cache"] = "fx_graph"
    s = _journal_with([lk], [])
    assert [x.kernel for x in s.cache_keys.lookups] == [None, None, None] and kernel_caches(s) == []


def _session(*lookups: tuple[str, str, str, str, float | None]) -> Session:
    """Kernel lookups of one frame: (kernel, outcome, key, ISA flags, build seconds)."""
    s = make_session([frame("0/0")])
    table = ComponentTable(s.cache_keys)
    for name, outcome, key, isa, built in lookups:
        comps = [*kernel_cache.kernel_components(f"src of {name}", f"None {CMD}", None)]
        comps = [c if c.name != "compile_command[ISA flags]" else type(c)(c.name, isa, isa) for c in comps]
        reason = KERNEL_ON_DISK if outcome == "hit" else KERNEL_IN_WORKER
        table.add("0/0", ParsedLookup("cpp_kernel", outcome, reason, key, None, comps, [], name, built))
    return s


def test_compare_names_each_kernel_that_hit_in_a_and_missed_in_b_and_what_changed() -> None:
    a = _session(("cpp_fused_a_0", "hit", "k1", "-mavx512f -mfma", None), ("cpp_fused_b_1", "hit", "k2",
                                                                            "-mavx512f -mfma", None))  # fmt: skip
    b = _session(("cpp_fused_a_0", "miss", "k3", "-mavx2 -mfma", 0.5), ("cpp_fused_b_1", "hit", "k2",
                                                                         "-mavx512f -mfma", None))  # fmt: skip
    (m,) = misses_between(a, b)
    assert (m.frame, m.cache, m.kernel) == ("0/0", "cpp_kernel", "cpp_fused_a_0")
    assert m.differences[0].words == "compile command, ISA flags: -mavx512f -> -mavx2"
    assert m.line("BASE's ").startswith("0/0: C++ kernel code cache (cpp_fused_a_0) missed (BASE's 0/0 hit)")
    same = _session(("cpp_fused_a_0", "miss", "k1", "-mavx512f -mfma", 0.5))
    (m2,) = misses_between(a, same)
    assert m2.same_key and "not on disk" in m2.line("BASE's ")
    assert kernels_served(a, b) is None  # nothing A built was found in B
    served = kernels_served(b, a)  # B built cpp_fused_a_0 under k3; A had k1: another key, not a saving
    assert served is None
    served = kernels_served(same, a)
    assert served is not None and (served.kernels, served.base_built_s, served.measured) == (1, 0.5, 1)
    assert served.line() == "1 kernel was built in BASE and on disk in NEW: BASE built it in 0.50 s"


def test_a_log_says_once_that_it_holds_no_kernel_outcomes() -> None:
    t = TraceLookups()
    assert t.warnings() == []  # no Inductor compile reached the caches
    t.found += [(object(), ParsedLookup("fx_graph", "miss")), (object(), ParsedLookup("aot_autograd", "miss"))]
    assert t.warnings() == [KERNEL_NOTE]


def test_kernel_lookups_survive_session_json_and_older_lookups_load() -> None:
    import json

    from dynaprof.model.store import session_from_text, session_to_text

    s = _session(("cpp_fused_a_0", "miss", "k1", "-mavx2", 0.5))
    again = session_from_text(session_to_text(s))
    assert again.cache_keys == s.cache_keys and again.cache_keys.lookups[0].built_s == 0.5
    data = json.loads(session_to_text(s))
    for lk in data["cache_keys"]["lookups"]:  # a lookup as an older dynaprof wrote it
        del lk["kernel"], lk["built_s"]
    old = session_from_text(json.dumps(data))
    assert old.cache_keys.lookups[0].kernel is None and old.cache_keys.lookups[0].built_s is None


def _fake_async_compile() -> types.ModuleType:
    module = types.ModuleType("torch._inductor.async_compile")

    class AsyncCompile:
        def cpp(self, source_code: str) -> Any:
            return None

        @classmethod
        def submit(cls, task: Any) -> Any:
            return _Future(task)

        def _wait_futures(self, scope: Any) -> None: ...

    module.AsyncCompile = AsyncCompile  # type: ignore[attr-defined]
    return module


def test_a_torch_without_the_names_warns_and_records_no_kernel_lookup(monkeypatch: Any) -> None:
    """``codecache.write`` missing: one warning, the builds still hooked, no lookup; only
    ``_worker_compile_cpp`` missing: a warning that in-process builds are not told from hits."""
    import sys

    for codecache, said in ((types.ModuleType("torch._inductor.codecache"), "kernel code cache lookups not captured"),
                            (types.SimpleNamespace(write=lambda *a, **k: ("k", "p")), "built in process")):  # fmt: skip
        async_compile = _fake_async_compile()
        monkeypatch.setitem(sys.modules, "torch._inductor.async_compile", async_compile)
        monkeypatch.setitem(sys.modules, "torch._inductor.codecache", codecache)
        rec = _Recorder()
        got: list[Any] = []
        rec.cache_lookup = lambda lk, key, got=got: got.append(lk)  # type: ignore[assignment,misc]
        kernel_builds.install(rec)  # type: ignore[arg-type]
        warnings = [r["msg"] for r in rec.records if r["t"] == "warn"]
        assert len(warnings) == 1 and said in warnings[0], warnings
        assert hasattr(async_compile.AsyncCompile.cpp, "__wrapped__")  # the builds are hooked all the same
        cpp_fused_0 = async_compile.AsyncCompile().cpp("void k() {}")
        assert cpp_fused_0 is None and got == []  # no key seen, no outcome known: nothing recorded


def test_a_kernel_miss_within_a_run_names_what_differed_from_the_same_source() -> None:
    """A later compile generates the same kernel source under another compile command: its miss
    is explained by the earlier lookup of that source (the command's part that changed)."""
    from dynaprof.analysis.cache_misses import misses_in_run

    s = make_session([frame("0/0"), frame("1/0", start_s=1.0)])
    table = ComponentTable(s.cache_keys)
    for key, cmd, outcome in (("0/0", CMD, "miss"), ("1/0", CMD.replace("-O3", "-O1"), "miss")):
        comps = kernel_cache.kernel_components("void k() {}", f"None {cmd}", None)
        table.add(key, ParsedLookup("cpp_kernel", outcome, KERNEL_IN_WORKER, f"key-{key}", None, comps, [],
                                    "cpp_fused_0"))  # fmt: skip
    (m,) = misses_in_run(s)
    assert (m.frame, m.against, m.kernel) == ("1/0", "0/0", "cpp_fused_0")
    assert m.line() == ("1/0: C++ kernel code cache (cpp_fused_0) missed (the same source as 0/0): "
                        "compile command, optimization flags: -O3 -> -O1")  # fmt: skip


def test_the_committed_logs_hold_no_kernel_outcome_and_say_so_once() -> None:
    from dynaprof.ingest.trace_to_session import import_torch_trace
    from tests.helpers import TESTS_DIR

    data = TESTS_DIR / "data" / "torch_trace"
    warm = import_torch_trace(data / "cache_warm.log.gz")  # two Inductor compiles, FX graph cache lookups
    assert warm.capture.warnings.count(KERNEL_NOTE) == 1
    assert not [lk for lk in warm.cache_keys.lookups if lk.kernel or lk.cache.endswith("_kernel")]
    eager = import_torch_trace(data / "graph_break_recompile.log.gz")  # no Inductor: nothing to say
    assert KERNEL_NOTE not in eager.capture.warnings
