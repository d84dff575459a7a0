"""Real caches: a tiny Inductor model (CPU) run twice with one ``TORCHINDUCTOR_CACHE_DIR``, then
with one thing changed per run; a real bypass; a miss explained within one run. Slow: each run
is a real Inductor compile (the first pays the C++ precompiled header, 10-40 s), so the cases
share one cache folder (``runs``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dynaprof.analysis.cache_misses import kernels_served, misses_between, misses_in_run, warm_start
from dynaprof.capture.child import ChildConfig
from dynaprof.capture.launcher import launch
from dynaprof.ingest.trace_to_session import import_torch_trace
from dynaprof.model.journal import RECORD_TYPES
from dynaprof.model.session import Session
from dynaprof.model.store import load_session
from dynaprof.render.markdown import md_escape
from tests.conftest import run_dynaprof
from tests.helpers import OLD_CACHES, typeddict_problems, unwrap

pytestmark = [pytest.mark.slow, pytest.mark.torch]

SCRIPT = """\
import torch
import torch._inductor.config as ic

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.l(x)) * 2

N = 4
with torch.no_grad():
    f = torch.compile(M(), backend="inductor")
    f(torch.randn(N, 8))
"""
#: one change per run: (how, the script, extra environment)
CHANGES: dict[str, tuple[str, dict[str, str]]] = {
    "config": (SCRIPT, {"TORCHINDUCTOR_SIZE_ASSERTS": "0"}),  # one Inductor config value
    "shape": (SCRIPT.replace("N = 4", "N = 5"), {}),  # one input's shape
    "model": (SCRIPT.replace("* 2", "* 3"), {}),  # one line of the model
}
BYPASS = SCRIPT.replace("import torch._inductor.config as ic\n", """import torch._inductor.config as ic

def my_pass(graph):
    return None

ic.post_grad_custom_post_pass = my_pass  # a plain function: FxGraphCache cannot key it
""")
#: torch 2.4 pickles a plain function by reference (no bypass); freezing makes it bypass
BYPASS_24 = SCRIPT.replace("as ic\n", "as ic\nic.freezing = True\n")
IN_RUN = SCRIPT + """
torch._dynamo.reset()
ic.max_fusion_size = 7
with torch.no_grad():
    torch.compile(M(), backend="inductor")(torch.randn(N, 8))
"""


def _torch_has(module: str, name: str) -> bool:
    """Whether the installed torch's ``module`` has ``name`` (what differs between versions)."""
    import importlib

    try:
        return hasattr(importlib.import_module(module), name)
    except Exception:
        return False



class Runs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache = root / "inductor-cache"
        self.cache.mkdir()
        self.terminal: dict[str, str] = {}  # run name -> what dynaprof run printed

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        # torch 2.4: the FX graph cache is off by default; 2.6: the AOTAutograd cache (on in 2.13)
        old = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1"} if OLD_CACHES else {"TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}
        return {"TORCHINDUCTOR_CACHE_DIR": str(self.cache), **old, **(extra or {})}

    def run(self, name: str, script: str, extra: dict[str, str] | None = None, *opts: str) -> tuple[Session, str]:
        src = self.root / f"src-{name}"  # the same file name each run: frames match by file and line
        src.mkdir()
        (src / "model.py").write_text(script)
        proc = run_dynaprof(["run", "-o", name, *opts, str(src / "model.py")], cwd=self.root, env=self.env(extra),
                            timeout=600)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        self.terminal[name] = proc.stdout + proc.stderr
        return load_session(self.root / name), (self.root / name / "summary.md").read_text()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    r = Runs(tmp_path_factory.mktemp("caches"))
    out: dict[str, Any] = {"runs": r}
    out["cold"] = r.run("cold", SCRIPT, None, "--torch-trace", "trace", "--aot-components")
    out["warm"] = r.run("warm", SCRIPT, None, "--aot-components")
    return out


def _outcomes(s: Session) -> list[tuple[str, str]]:
    return [(lk.cache, lk.outcome) for lk in s.cache_keys.lookups]


def test_second_run_hits_and_says_so(runs: dict[str, Any]) -> None:
    cold, cold_md = runs["cold"]
    warm, warm_md = runs["warm"]
    assert ("fx_graph", "miss") in _outcomes(cold)
    assert ("dynamo", "miss") in _outcomes(cold)  # Dynamo's own cache: a first compile
    assert OLD_CACHES or ("aot_autograd", "miss") in _outcomes(cold)  # torch 2.4 has no AOTAutograd cache
    # the graph caches' hit (the kernels the cached graph loads are kernel code cache hits too)
    hit = next(lk for lk in warm.cache_keys.lookups if lk.outcome == "hit" and lk.cache in ("aot_autograd", "fx_graph"))
    assert (hit.time_saved_s is None) if OLD_CACHES else (hit.time_saved_s and hit.time_saved_s > 0)  # 2.4: unsaid
    ws = warm_start(warm)
    assert ws is not None and (ws.served, ws.graphs) == (1, 1)
    assert "served from cache: 1 of 1 graph" in unwrap(warm_md) and (OLD_CACHES or " s saved" in warm_md)
    assert "served from cache: 0 of 1 graph" in unwrap(cold_md)
    assert "cache: served from cache: 1 of 1 graph" in unwrap(runs["runs"].terminal["warm"])
    # every lookup carries its key and components (AOTAutograd's too, computed without DEBUG logging)
    for lk in cold.cache_keys.lookups:
        if lk.cache in ("aot_autograd", "fx_graph"):
            assert lk.key and len(lk.components) > 100 and lk.nodes, lk
            parts = cold.cache_keys.parts(lk)
            assert all(len(c.value) <= 200 for c in parts)
            assert any(c.name.startswith("inductor_config[") for c in parts)


def test_the_log_holds_the_same_lookups(runs: dict[str, Any]) -> None:
    """The TORCH_TRACE log written beside the run: the same FX graph lookup and components."""
    if OLD_CACHES:
        pytest.skip("torch 2.4 logs an FX graph cache key without its outcome (test_cache_keys has its note)")
    cold, _ = runs["cold"]
    logs = sorted((runs["runs"].root / "trace").glob("*.log"))
    assert logs
    imported = import_torch_trace(logs[0])
    live = {(lk.cache, lk.outcome, lk.key) for lk in cold.cache_keys.lookups if lk.cache == "fx_graph"}
    got = {(lk.cache, lk.outcome, lk.key) for lk in imported.cache_keys.lookups if lk.cache == "fx_graph"}
    assert live and live == got
    fx = next(lk for lk in imported.cache_keys.lookups if lk.cache == "fx_graph")
    live_fx = next(lk for lk in cold.cache_keys.lookups if lk.cache == "fx_graph")
    assert {c.hash for c in imported.cache_keys.parts(fx)} == {c.hash for c in cold.cache_keys.parts(live_fx)}


@pytest.mark.parametrize("change", list(CHANGES))
def test_one_change_is_named_first(runs: dict[str, Any], change: str) -> None:
    r: Runs = runs["runs"]
    warm, _ = runs["warm"]
    script, extra = CHANGES[change]
    changed, _ = r.run(f"changed-{change}", script, extra, "--aot-components")
    misses = misses_between(warm, changed)
    assert misses, _outcomes(changed)
    first = misses[0]
    assert first.known and first.differences
    d = first.differences[0]
    if change == "config":
        assert (d.kind, d.name) == ("config", "inductor_config[size_asserts]")
        assert d.words == "Inductor config size_asserts: True -> False"
    elif change == "shape":
        assert d.kind == "input" and "shape (4, 8) -> (5, 8)" in d.words
    else:
        assert d.kind == "graph" and "first differing node mul" in d.words and "3" in d.words
    proc = run_dynaprof(["compare", "warm", f"changed-{change}", "-o", f"cmp-{change}"], cwd=r.root)
    assert proc.returncode == 0, proc.stderr
    assert d.words in unwrap(proc.stderr + proc.stdout)
    md = (r.root / f"cmp-{change}" / "compare.md").read_text()
    assert "#### Cache" in md
    assert 'id="cache"' in (r.root / f"cmp-{change}" / "compare.html").read_text()


def test_a_real_bypass_shows_its_reason(runs: dict[str, Any]) -> None:
    s, md = runs["runs"].run("bypass", BYPASS_24 if OLD_CACHES else BYPASS)
    reasons = {(lk.cache, lk.reason) for lk in s.cache_keys.lookups if lk.outcome == "bypass"}
    if OLD_CACHES:  # torch 2.4 counts the bypass and gives no reason
        assert ("fx_graph", None) in reasons
        assert md_escape("FX graph cache bypassed: torch gave no reason") in unwrap(md)
        return
    assert ("fx_graph", "Unsupported post grad custom pass") in reasons
    assert md_escape("FX graph cache bypassed: Unsupported post grad custom pass") in unwrap(md)
    html = (runs["runs"].root / "bypass" / "report.html").read_text()
    assert "Unsupported post grad custom pass" in html


def test_a_miss_within_one_run_names_what_differed(runs: dict[str, Any]) -> None:
    s, md = runs["runs"].run("in-run", IN_RUN, None, "--aot-components")
    explained = misses_in_run(s)
    assert explained, _outcomes(s)
    assert explained[0].differences[0].words == "Inductor config max_fusion_size: 64 -> 7"
    assert md_escape("(the same graph as 0/0): Inductor config max_fusion_size: 64 -> 7") in unwrap(md)


def test_aot_components_are_left_out_by_default(runs: dict[str, Any]) -> None:
    """Without ``--aot-components``: AOTAutograd's lookups are still recorded, without the components
    dynaprof would compute (the FX graph cache's, which torch gives, are kept); with the option they
    are computed (``test_second_run_hits_and_says_so``)."""
    if OLD_CACHES:
        pytest.skip("torch 2.4 has no AOTAutograd cache")
    s, _ = runs["runs"].run("no-aot", SCRIPT.replace("N = 4", "N = 6"))
    aot = [lk for lk in s.cache_keys.lookups if lk.cache == "aot_autograd"]
    fx = [lk for lk in s.cache_keys.lookups if lk.cache == "fx_graph"]
    assert aot and all(lk.key for lk in aot)
    # torch 2.6 computes them itself, whatever the logging or the option (2.13: only at DEBUG)
    torch_gives = not _torch_has("torch._functorch._aot_autograd.autograd_cache", "_get_debug_lines_for_cache_key")
    assert all(bool(lk.components) == torch_gives for lk in aot)
    assert fx and all(len(lk.components) > 100 for lk in fx)
    if not torch_gives:  # an AOTAutograd miss against the warm run (which has them) names the option
        aot_misses = [m for m in misses_between(runs["warm"][0], s) if m.cache == "aot_autograd"]
        assert aot_misses and all("--aot-components" in m.line("BASE's ") for m in aot_misses)


def test_journal_records_are_of_their_types(runs: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    r: Runs = runs["runs"]
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(r.cache))
    if OLD_CACHES:
        monkeypatch.setenv("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
    target = r.root / "journal.py"
    target.write_text(SCRIPT)
    journal = r.root / "journal.jsonl"
    journal.write_bytes(b"")
    assert launch(ChildConfig(journal=str(journal), kind="script", target=str(target), args=[])).exit_status == 0
    records = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    kinds = {rec["t"] for rec in records}
    assert {"key_part", "cache_lookup"} <= kinds
    problems = [p for i, rec in enumerate(records) if rec["t"] in ("key_part", "cache_lookup")
                for p in typeddict_problems(rec, RECORD_TYPES[rec["t"]], f"{rec['t']} {i}")]  # fmt: skip
    assert problems == []


PGO = """\
import torch

@torch.compile(backend="eager")
def f(x):
    return x * 2

f(torch.randn(4))
f(torch.randn(5))
"""


def test_profile_guided_code_state_misses_then_hits(runs: dict[str, Any]) -> None:
    """With a job id, Dynamo reads its code state at the first compile and writes it at exit: the
    first run misses, the next hits, and compiles the size that changed dynamic at once."""
    if OLD_CACHES:
        pytest.skip("torch 2.4 has no profile-guided code state (torch._dynamo.pgo)")
    if not _torch_has("torch._dynamo.pgo", "get_local_code_state"):
        pytest.skip("this torch's profile-guided code state has no get_local_code_state: its lookups are not seen")
    r: Runs = runs["runs"]
    job = {"TORCH_COMPILE_JOB_ID": "dynaprof-pgo-test"}
    first, _ = r.run("pgo-1", PGO, job)
    second, md = r.run("pgo-2", PGO, job)
    assert [lk.outcome for lk in first.cache_keys.lookups if lk.cache == "pgo"] == ["miss"]
    assert [lk.outcome for lk in second.cache_keys.lookups if lk.cache == "pgo"] == ["hit"]
    recompile = next(lk for lk in first.cache_keys.lookups if lk.frame == "0/1")
    assert recompile.cache == "dynamo" and "size mismatch at index 0" in (recompile.reason or "")
    assert len(second.frames) == 1  # the code state made the first compile dynamic
    assert md_escape("0/0: Dynamo's profile-guided code state hit") in unwrap(md)


@pytest.mark.inductor
def test_kernels_are_built_cold_and_found_on_disk_warm(tmp_path: Path) -> None:
    """The FX graph cache off: the second run must compile the graph again, but each C++ kernel it
    generates is the same source under the same compile command, so the kernel code cache has it
    on disk. The first run's kernel lookups are misses (built), the second's hits, with the same
    keys; the graphs' own line is unchanged, and compare says what BASE's builds were."""
    r = Runs(tmp_path)  # a cache folder of its own: no kernel of this script built yet
    off = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "0"}
    cold, cold_md = r.run("kernels-cold", SCRIPT, off)
    warm, warm_md = r.run("kernels-warm", SCRIPT, off)
    ck, wk = ([lk for lk in s.cache_keys.lookups if lk.cache == "cpp_kernel"] for s in (cold, warm))
    assert ck and len(ck) == len(wk), (ck, wk)
    assert {lk.outcome for lk in ck} == {"miss"} and {lk.outcome for lk in wk} == {"hit"}
    assert [(lk.kernel, lk.key) for lk in ck] == [(lk.kernel, lk.key) for lk in wk]
    assert all(lk.kernel and lk.kernel.startswith("cpp_") and lk.key for lk in ck)
    assert all(lk.reason in ("built in a compile worker", "built in process") for lk in ck)
    assert all(lk.reason == "on disk" and lk.time_saved_s is None for lk in wk)  # torch says no saving per kernel
    names = {c.name for c in cold.cache_keys.parts(ck[0])}
    assert {"kernel_source", "compile_command[compiler]", "compile_command[ISA flags]"} <= names
    assert not [lk for lk in warm.cache_keys.lookups if lk.cache == "fx_graph" and lk.outcome == "hit"]
    n = len(ck)
    kernels = f"kernel{'' if n == 1 else 's'}"
    assert f"C++ kernel code cache: 0 of {n} {kernels} on disk, {n} built" in unwrap(cold_md)
    assert f"C++ kernel code cache: {n} of {n} {kernels} on disk" in unwrap(warm_md)
    served = kernels_served(cold, warm)
    assert served is not None and served.kernels == n
    back = [m for m in misses_between(warm, cold) if m.cache == "cpp_kernel"]  # hit in A, missed in B
    assert len(back) == n and all(m.same_key and m.kernel for m in back)
