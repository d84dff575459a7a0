"""Cache markers per compile (FX graph cache, AOTAutograd cache): one implementation
(``dynaprof.model.cache``) for live runs (journal ``span`` records with ``ph == "i"``) and
TORCH_TRACE imports (``artifact`` records), in the session, its codec and the summaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dynaprof.analysis.cache_summary import WARM_WARNING, cache_line, counts_text
from dynaprof.ingest.assemble import ParentFacts, assemble
from dynaprof.ingest.trace_to_session import import_torch_trace
from dynaprof.model.cache import CacheTally, cache_totals, marker
from dynaprof.model.session import CacheStats
from dynaprof.model.store import load_session, session_from_text, session_to_text
from dynaprof.render.markdown import summary_markdown
from dynaprof.render.terminal import summary_text
from tests.conftest import run_dynaprof
from tests.factories import frame, make_session
from tests.helpers import JOURNAL, OLD_CACHES, TESTS_DIR, TID, unwrap

DATA = TESTS_DIR / "data" / "torch_trace"




def test_the_counts_in_words_and_the_warm_warning_apart() -> None:
    warm = {"fx_graph": CacheStats(hits=2, misses=1, time_saved_s=0.5), "aot_autograd": CacheStats(bypasses=1)}
    cold = {"fx_graph": CacheStats(misses=1)}
    assert counts_text(warm) == "FX graph cache: 2 hits, 1 miss (saved 0.50 s); AOTAutograd cache: 1 bypass"
    assert cache_line(warm) == f"{counts_text(warm)}: {WARM_WARNING}"
    assert cache_line(cold) == counts_text(cold) == "FX graph cache: 1 miss"
    assert counts_text({}) is None and cache_line({}) is None


def test_marker_names() -> None:
    assert marker("fx_graph_cache_hit") == ("fx_graph", "hit")
    assert marker("autograd_cache_bypass") == ("aot_autograd", "bypass")  # the instant event's older name
    assert marker("aotautograd_cache_miss") == ("aot_autograd", "miss")
    assert marker("fx_graph_cache_hash") is None and marker("inductor_compile") is None


def test_tally_prefers_artifacts_then_events_then_metrics() -> None:
    t = CacheTally()
    t.event("fx_graph_cache_hit", {"time_saved_ns": 2_500_000_000})
    t.event("autograd_cache_miss")
    assert t.result() == {"fx_graph": CacheStats(hits=1, time_saved_s=2.5), "aot_autograd": CacheStats(misses=1)}
    t.artifact("fx_graph_cache_hit")  # the same lookup, marked twice: counted once
    assert t.result()["fx_graph"].hits == 1 and "aot_autograd" not in t.result()
    counters = {"inductor_fx_local_cache_hit_count": 2, "aotautograd_remote_cache_miss_count": 1}
    metrics_only = CacheTally().result(counters)
    assert metrics_only == {"fx_graph": CacheStats(hits=2), "aot_autograd": CacheStats(misses=1)}


def test_warm_cache_log_from_the_installed_torch() -> None:
    """Inductor twice around torch._dynamo.reset(): the second compile loads from the caches."""
    s = import_torch_trace(DATA / "cache_warm.log.gz")
    cold, warm = s.frames
    assert cold.cache == {"fx_graph": CacheStats(misses=1), "aot_autograd": CacheStats(misses=1)}
    assert warm.cache == {"fx_graph": CacheStats(hits=1), "aot_autograd": CacheStats(hits=1)}
    assert (warm.compile_time_s or 0) < (cold.compile_time_s or 0) / 10
    line = cache_line(cache_totals(s.frames))
    assert line == ("FX graph cache: 1 hit, 1 miss; AOTAutograd cache: 1 hit, 1 miss: "
                    "times do not compare with a cold run")  # fmt: skip
    assert line in unwrap(summary_text(s)) and f"**Cache:** {line}" in summary_markdown(s)
    again = session_from_text(session_to_text(s))
    assert again.frames[1].cache == warm.cache


def test_live_journal_instant_events_become_cache_markers() -> None:
    records: list[dict[str, Any]] = [dict(r) for r in JOURNAL]
    at = next(i for i, r in enumerate(records) if r["t"] == "metrics")
    for name in ("fx_graph_cache_hit", "fx_graph_cache_hit", "fx_graph_cache_hit", "autograd_cache_bypass"):
        records.insert(at, {"t": "span", "name": name, "ph": "i", "tid": TID, "ts": 3.0, "key": "0/0"})
    s = assemble(iter(records), ParentFacts(command=["dynaprof", "run", "tiny.py"], exit_status=0))
    f = next(f for f in s.frames if f.key == "0/0")
    assert f.cache == {"fx_graph": CacheStats(hits=3), "aot_autograd": CacheStats(bypasses=1)}
    text = unwrap(summary_text(s))
    assert "FX graph cache: 3 hits" in text and "times do not compare with a cold run" in text


def test_older_sessions_without_the_new_fields_still_load() -> None:
    s = make_session([frame("0/0")])
    data = json.loads(session_to_text(s))
    data["schema_version"] = 1  # as a session written before these fields existed
    for f in data["frames"]:
        for key in ("cache", "fail_filename", "fail_lineno", "collectives"):
            del f[key]
    old = session_from_text(json.dumps(data))
    assert old.frames[0].cache == {} and old.frames[0].fail_filename is None and old.frames[0].collectives is None
    assert cache_line(cache_totals(old.frames)) is None and "Cache" not in summary_markdown(old)


def test_failure_source_line_is_shown_with_the_failure() -> None:
    f = frame("0/0", status="failed")
    f.fail_type, f.fail_reason = "BackendCompilerFailed", "backend='boom' raised: RuntimeError"
    f.fail_filename, f.fail_lineno = "/w/model_<b>.py", 42
    s = make_session([f])
    assert "failed: 0/0 BackendCompilerFailed at model_<b>.py:42: backend='boom' raised" in unwrap(summary_text(s))
    md = summary_markdown(s)
    assert "Failed compiles (1)" in md
    assert "| 0/0 | BackendCompilerFailed | model\\_&lt;b&gt;.py:42 |" in md  # escaped, as anything from a log


@pytest.mark.torch
def test_live_run_records_the_cache_markers(tmp_path: Path) -> None:
    """A real `dynaprof run` of the warm-cache script: the same CacheStats as the TORCH_TRACE import
    (torch 2.13 marks AOTAutograd lookups with instant events, FX graph ones in the metrics)."""
    script = DATA / "scripts" / "cache_warm.py"
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    if OLD_CACHES:  # torch 2.4: the FX graph cache is off by default, and there is no AOTAutograd cache
        env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "1"
    r = run_dynaprof(["run", "-o", str(tmp_path / "run"), "--sampler", "none", str(script)], tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    s = load_session(tmp_path / "run")
    cold, warm = s.frames
    # the AOTAutograd cache is on by default in torch 2.13, off in 2.6, absent in 2.4
    caches = ["fx_graph"] + (["aot_autograd"] if any(lk.cache == "aot_autograd" for lk in s.cache_keys.lookups) else [])

    def counts(c: dict[str, CacheStats]) -> dict[str, tuple[int, int, int]]:  # hit time saved: 2.6's, not 2.13's
        return {k: (v.hits, v.misses, v.bypasses) for k, v in c.items()}

    assert counts(cold.cache) == dict.fromkeys(caches, (0, 1, 0))
    assert counts(warm.cache) == dict.fromkeys(caches, (1, 0, 0))
    err = unwrap(r.stderr)
    assert "FX graph cache: 1 hit, 1 miss" in err and "times do not compare with a cold run" in err
