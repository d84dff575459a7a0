"""Cache lookups and why they missed: the model (parsing torch's cache info), the analysis on
hand-built sessions, both importers (a hand-written journal and TORCH_TRACE snippet), the
session format, and the Cache section of the reports. The real caches: tests/e2e/test_cache_real.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from dynaprof.analysis.cache_misses import differences, misses_between, misses_in_run, warm_start
from dynaprof.ingest.assemble import ParentFacts, assemble
from dynaprof.ingest.trace_to_session import import_torch_trace
from dynaprof.model.cache_keys import (
    VALUE_CHARS,
    CacheKeys,
    ComponentTable,
    KeyComponent,
    cut,
    graph_nodes,
    lookup_from_info,
    parse_component,
)
from dynaprof.model.codec import from_json, to_json
from dynaprof.model.session import Session
from dynaprof.model.store import session_from_text, session_to_text
from dynaprof.render.base import RenderContext
from dynaprof.render.cache_section import compare_lines, run_lines, view
from dynaprof.render.markdown import summary_markdown
from dynaprof.render.report_html import report_html
from dynaprof.render.terminal import summary_text
from tests.factories import frame, make_session
from tests.helpers import JOURNAL, TESTS_DIR, unwrap

DATA = TESTS_DIR / "data" / "torch_trace"

CODE = """GraphModule()



def forward(self, primals_1, primals_2):
    permute = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
    mm = torch.ops.aten.mm.default(primals_2, permute);  permute = None
    mul = torch.ops.aten.mul.Tensor(mm, 2);  mm = None
    return (mul,)
"""


def _tensor(shape: str, stride: str, dtype: str = "torch.float32") -> str:
    return (f"TensorMetadata(dtype={dtype}, shape=torch.Size([{shape}]), stride=({stride}), "
            "device=device(type='cpu'), layout=torch.strided, requires_grad=False)")  # fmt: skip


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:52]


def debug_lines(*, code: str = CODE, shape: str = "4, 8", fusion: str = "64", torch_v: str = "abc",
                post_pass: str = "None") -> list[str]:  # fmt: skip
    """What ``FxGraphCachePickler.debug_lines`` gives, for a graph, one input and a few settings."""
    parts = [("gm", code), ("example_inputs[0]", _tensor(shape, "8, 1")), ("fx_kwargs[is_backward]", "False"),
             ("torch_version", torch_v), ("system_info[hash]", "44136fa3"),
             ("inductor_config[max_fusion_size]", fusion), ("inductor_config[debug]", "False"),
             ("post_grad_custom_post_pass", post_pass)]  # fmt: skip
    return [f"[{_h(v)}] {n}: {v}" for n, v in parts]


def info(state: str = "miss", key: str = "k1", **kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"cache_state": state, "key": key, "components": debug_lines(**kw)}
    if state == "hit":
        out["time_saved_ns"] = 2_500_000_000
    return out


def session_with(lookups: list[tuple[str, str, dict[str, Any]]]) -> Session:
    """A session whose frames (one per distinct frame key, in order) made these lookups."""
    keys = list(dict.fromkeys(k for k, _, _ in lookups))
    s = make_session([frame(k, start_s=float(i)) for i, k in enumerate(keys)])
    table = ComponentTable(s.cache_keys)
    for key, cache, data in lookups:
        lk = lookup_from_info(cache, data)
        assert lk is not None
        table.add(key, lk)
    return s


# -- the model: torch's cache info read ------------------------------------------------------


def test_a_component_line_is_read_and_its_value_cut() -> None:
    comp, whole = parse_component("[abc123] inductor_config[max_fusion_size]: 64") or (None, "")
    assert comp == KeyComponent("inductor_config[max_fusion_size]", "abc123", "64") and whole == "64"
    long, _ = parse_component("[h] torch_version: " + "\x00\x01é" + "x" * 500) or (None, "")
    assert long is not None and len(long.value) == VALUE_CHARS and long.value.startswith("??é")
    assert parse_component("not a component") is None
    assert cut("a" * 300).endswith("...") and len(cut("a" * 300)) == VALUE_CHARS


def test_the_graph_code_becomes_one_hash_per_node() -> None:
    nodes = graph_nodes(CODE)
    assert [n.name for n in nodes] == ["permute", "mm", "mul", "return"]
    assert nodes[2].value == "mul = torch.ops.aten.mul.Tensor(mm, 2)"  # the frees are not the node
    changed = graph_nodes(CODE.replace("mm, 2", "mm, 3"))
    assert [a.hash == b.hash for a, b in zip(nodes, changed, strict=True)] == [True, True, False, True]
    # a later use moving a free onto another line does not change the earlier node's hash
    moved = graph_nodes(CODE.replace(";  primals_1 = None", ""))
    assert moved[0].hash == nodes[0].hash


def test_cache_info_becomes_a_lookup() -> None:
    hit = lookup_from_info("fx_graph", info("hit"))
    assert hit is not None and (hit.outcome, hit.key, hit.time_saved_s) == ("hit", "k1", 2.5)
    assert len(hit.components) == 8 and [n.name for n in hit.nodes] == ["permute", "mm", "mul", "return"]
    aot = lookup_from_info("aot_autograd", {"cache_state": "hit", "key": "a", "time_saved_ms": 1500.0})
    assert aot is not None and aot.time_saved_s == 1.5 and aot.components == []
    bypass = lookup_from_info("fx_graph", {"cache_state": "bypass", "cache_bypass_reason": "Unsupported\n  pass"})
    assert bypass is not None and bypass.reason == "Unsupported pass" and bypass.key is None
    miss = lookup_from_info("fx_graph", {"cache_state": "miss", "key": "k", "time_saved_ns": 5})
    assert miss is not None and miss.time_saved_s is None  # only a hit saves time
    assert lookup_from_info("fx_graph", {"cache_state": "disabled"}) is None
    assert lookup_from_info("fx_graph", {}, "miss") is not None  # the outcome from the marker's name


def test_components_are_held_once_per_session() -> None:
    s = session_with([("0/0", "fx_graph", info()), ("1/0", "fx_graph", info(key="k2", fusion="7"))])
    ck = s.cache_keys
    assert len(ck.lookups) == 2 and len(ck.components) == 8 + 4 + 1  # 8 + nodes + the changed config
    assert [c.name for c in ck.parts(ck.lookups[1])][5] == "inductor_config[max_fusion_size]"
    assert ck.of_frame("1/0") == [ck.lookups[1]]


# -- the analysis -------------------------------------------------------------------------------


def _between(**changed: Any) -> list[str]:
    a = session_with([("0/0", "fx_graph", info("hit"))])
    b = session_with([("0/0", "fx_graph", info("miss", key="k2", **changed))])
    found = misses_between(a, b)
    assert len(found) == 1 and found[0].known
    return [d.words for d in found[0].differences]


def test_two_runs_name_what_differed_in_words() -> None:
    assert _between(fusion="7") == ["Inductor config max_fusion_size: 64 -> 7"]
    assert _between(shape="5, 8") == ["input 0: shape (4, 8) -> (5, 8)"]
    graph = _between(code=CODE.replace("mm, 2", "mm, 3"))
    assert graph == ["the graph's code changed: first differing node mul (node 3): "
                     "mul = torch.ops.aten.mul.Tensor(mm, 2) -> mul = torch.ops.aten.mul.Tensor(mm, 3)"]  # fmt: skip
    assert _between(torch_v="def") == ["torch version: abc -> def"]
    assert _between(post_pass="<function my_pass>") == [
        "custom pass or user-defined Triton kernel post_grad_custom_post_pass: None -> <function my_pass>"]


def test_the_likeliest_cause_comes_first() -> None:
    # a new torch changes everything; a config change before the inputs; the inputs before the graph
    words = _between(torch_v="def", fusion="7", shape="5, 8", code=CODE.replace("mm, 2", "mm, 3"))
    assert [w.split(":")[0] for w in words] == [
        "torch version", "Inductor config max_fusion_size", "input 0", "the graph's code changed"]


def test_only_hit_then_miss_is_explained_and_the_rest_is_said() -> None:
    a = session_with([("0/0", "fx_graph", info("hit")), ("1/0", "fx_graph", info("miss"))])
    b = session_with([("0/0", "fx_graph", info("miss")), ("1/0", "fx_graph", info("miss", key="k9"))])
    found = misses_between(a, b)
    assert len(found) == 1 and found[0].same_key and found[0].frame == "0/0"  # 1/0 missed in A too
    assert "with the same key: the entry was not stored" in found[0].line("BASE's ")
    bare = session_with([("0/0", "fx_graph", {"cache_state": "miss", "key": "k2"})])
    unknown = misses_between(a, bare)[0]
    assert not unknown.known and "no key components" in unknown.line("BASE's ")


def test_a_miss_within_a_run_names_the_component() -> None:
    s = session_with([("0/0", "fx_graph", info()), ("0/0#1", "fx_graph", info(key="k2", fusion="7")),
                      ("1/0", "fx_graph", info(key="k3", code=CODE.replace("mm, 2", "mm, 5")))])  # fmt: skip
    found = misses_in_run(s)
    assert len(found) == 1  # 1/0's graph is another graph: nothing earlier could have served it
    assert found[0].line() == ("0/0#1: FX graph cache missed (the same graph as 0/0): "
                               "Inductor config max_fusion_size: 64 -> 7")  # fmt: skip


def test_warm_start_counts_graphs_served_and_time_saved() -> None:
    s = session_with([("0/0", "aot_autograd", info("hit")), ("1/0", "aot_autograd", info("miss")),
                      ("1/0", "fx_graph", info("hit")), ("2/0", "fx_graph", info("miss"))])  # fmt: skip
    ws = warm_start(s)
    assert ws is not None and (ws.served, ws.graphs, ws.saved_s) == (2, 3, 5.0)
    assert ws.line() == "served from cache: 2 of 3 graphs, 5.0 s saved"
    assert warm_start(make_session([frame("0/0")])) is None


def test_components_missing_on_one_side_differ() -> None:
    a = session_with([("0/0", "fx_graph", info("hit"))])
    b = session_with([("0/0", "fx_graph", {**info(key="k2"), "components": debug_lines()[:-1]})])
    la, lb = a.cache_keys.lookups[0], b.cache_keys.lookups[0]
    assert [d.words for d in differences(a.cache_keys, la, b.cache_keys, lb)] == [
        "custom pass or user-defined Triton kernel post_grad_custom_post_pass: None -> (absent)"]


# -- the importers -------------------------------------------------------------------------------


def test_journal_records_become_the_session_lookups() -> None:
    records: list[dict[str, Any]] = [dict(r) for r in JOURNAL]
    at = next(i for i, r in enumerate(records) if r["t"] == "metrics")
    parts = [{"t": "key_part", "items": [[0, "gm", "g1", "GraphModule()"], [1, "inductor_config[debug]", "d1",
                                                                            "False"]]},
             {"t": "key_part", "items": [[2, "mul", "n1", "mul = mm * 2"], ["bad"], [3, None, "h", "v"]]}]
    lookups = [{"t": "cache_lookup", "key": "0/0", "cache": "fx_graph", "outcome": "hit", "parts": [0, 1],
                "nodes": [2], "cache_key": "fk", "saved_s": 1.25},
               {"t": "cache_lookup", "key": "0/0", "cache": "aot_autograd", "outcome": "bypass", "parts": [],
                "nodes": [], "reason": "Unsupported post grad custom pass"},
               {"t": "cache_lookup", "key": "0/0", "cache": "fx_graph", "outcome": "miss", "parts": [7, "x"],
                "nodes": None}]  # fmt: skip
    records[at:at] = parts + lookups
    s = assemble(iter(records), ParentFacts(command=["dynaprof", "run", "tiny.py"], exit_status=0))
    got = [(lk.frame, lk.cache, lk.outcome, lk.key, lk.time_saved_s, lk.reason) for lk in s.cache_keys.lookups]
    assert got[0][:3] == ("0/0", "dynamo", "miss") and got[0][5] == "first compile of this code: no cache entry yet"
    assert got[-1][:3] == ("1/0", "dynamo", "miss")  # the journal's other frame, after 0/0's lookups
    assert got[1:-1] == [("0/0", "fx_graph", "hit", "fk", 1.25, None),
                       ("0/0", "aot_autograd", "bypass", None, None, "Unsupported post grad custom pass"),
                       ("0/0", "fx_graph", "miss", None, None, None)]  # fmt: skip
    hit = s.cache_keys.lookups[1]
    assert [c.name for c in s.cache_keys.parts(hit)] == ["gm", "inductor_config[debug]"]
    assert [c.value for c in s.cache_keys.node_parts(hit)] == ["mul = mm * 2"]
    assert s.cache_keys.lookups[3].components == []  # unknown ids are dropped, not guessed


def _record(envelope: dict[str, Any], payload: str) -> str:
    """One TORCH_TRACE record as torch writes it: glog prefix, envelope with the payload's md5, TAB lines."""
    env = {**envelope, "has_payload": hashlib.md5(payload.encode()).hexdigest()}
    return ("V1130 20:00:36.800000 11653 torch/_inductor/compile_fx.py:1151] " + json.dumps(env) + "\n"
            + "".join(f"\t{line}\n" for line in payload.split("\n")))  # fmt: skip


def test_a_torch_trace_log_gives_the_lookups_with_components(tmp_path: Path) -> None:
    log = (DATA / "one_frame.log").read_text()
    ctx = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
    fx = _record({"artifact": {"name": "fx_graph_cache_miss", "encoding": "json"}, **ctx},
                 json.dumps(info("miss", key="fxkey")))
    aot = _record({"artifact": {"name": "aotautograd_cache_bypass", "encoding": "json"}, **ctx},
                  json.dumps({"cache_state": "bypass", "cache_bypass_reason": "Can't cache <torchbind>",
                              "key": None, "components": []}))  # fmt: skip
    at = log.index("V1130 20:00:36.841000")  # before the compile's metrics
    path = tmp_path / "dedicated_log_torch_trace_x.log"
    path.write_text(log[:at] + fx + aot + log[at:])
    s = import_torch_trace(path)
    assert not [w for w in s.capture.warnings if "md5" in w]
    got = [(lk.frame, lk.cache, lk.outcome, lk.key, lk.reason) for lk in s.cache_keys.lookups]
    assert got == [("0/0", "dynamo", "miss", got[0][3], "first compile of this code: no cache entry yet"),
                   ("0/0", "fx_graph", "miss", "fxkey", None),
                   ("0/0", "aot_autograd", "bypass", None, "Can't cache <torchbind>")]  # fmt: skip
    fxl = s.cache_keys.lookups[1]
    assert len(s.cache_keys.parts(fxl)) == 8 and [n.name for n in s.cache_keys.node_parts(fxl)][-1] == "return"
    assert s.frames[0].cache["fx_graph"].misses == 1  # the tally another module keeps is unchanged


def test_the_committed_warm_log_holds_hits_with_time_saved() -> None:
    s = import_torch_trace(DATA / "cache_warm.log.gz")
    outcomes = [(lk.frame, lk.cache, lk.outcome) for lk in s.cache_keys.lookups if lk.cache != "dynamo"]
    assert ("0/0#1", "fx_graph", "hit") in outcomes and ("0/0", "fx_graph", "miss") in outcomes
    hit = next(lk for lk in s.cache_keys.lookups if lk.cache == "fx_graph" and lk.outcome == "hit")
    assert hit.time_saved_s and hit.time_saved_s > 0 and len(hit.components) > 100 and hit.nodes


# -- the session format and the reports -------------------------------------------------------------


def test_lookups_survive_session_json_and_older_sessions_load() -> None:
    s = session_with([("0/0", "fx_graph", info("hit"))])
    again = session_from_text(session_to_text(s))
    assert again.cache_keys == s.cache_keys
    data = json.loads(session_to_text(s))
    del data["cache_keys"]  # a session written before this field
    old = from_json(Session, data)
    assert old.cache_keys == CacheKeys() and view(old) is None and run_lines(old) == []
    assert to_json(old)["cache_keys"] == {"components": [], "lookups": []}


def test_the_reports_show_the_cache_section_escaped() -> None:
    evil = "<img src=x onerror=alert(1)>"
    s = session_with([("0/0", "fx_graph", info()), ("0/0#1", "fx_graph", info(key="k2", fusion=evil)),
                      ("0/0#1", "aot_autograd", {"cache_state": "bypass", "cache_bypass_reason": f"bad {evil}"})])
    lines = run_lines(s)
    assert lines[0] == "served from cache: 0 of 2 graphs"
    assert f"Inductor config max_fusion_size: 64 -> {evil}" in lines[1]
    assert lines[2] == f"0/0#1: AOTAutograd cache bypassed: bad {evil}"
    md = summary_markdown(s)
    assert "#### Cache" in md and "<img" not in md
    html = report_html_of(s)
    assert 'id="cache"' in html and "<img" not in html and "&lt;img" in html
    text = unwrap(summary_text(s))  # the terminal summary: the same lines
    assert "cache: served from cache: 0 of 2 graphs" in text and "cache: 0/0#1: AOTAutograd cache bypassed" in text


def report_html_of(s: Session) -> str:
    return report_html(RenderContext(s))


def test_compare_lines_say_both_warm_starts_and_the_differences() -> None:
    a = session_with([("0/0", "fx_graph", info("hit"))])
    b = session_with([("0/0", "fx_graph", info(key="k2", fusion="7", shape="5, 8"))])
    lines = [unwrap(x) for x in compare_lines(a, b)]
    assert lines[0] == "BASE served from cache: 1 of 1 graph, 2.5 s saved; NEW served from cache: 0 of 1 graph"
    assert lines[1] == "0/0: FX graph cache missed (BASE's 0/0 hit): Inductor config max_fusion_size: 64 -> 7 " \
                       "(and 1 more component)"
    assert lines[2] == "  also: input 0: shape (4, 8) -> (5, 8)"


# -- torch 2.4: keys from the structured trace, outcomes from Inductor's counters --------------


def _split(lines: list[str]) -> list[str]:
    """Torch 2.4's ``fx_graph_cache_hash`` components: its ``debug_str`` split at every newline."""
    return "\n".join(lines).split("\n")


def test_torch_24_components_split_at_newlines_are_joined_back() -> None:
    whole = lookup_from_info("fx_graph", info())
    split = lookup_from_info("fx_graph", {**info(), "components": _split(debug_lines())})
    assert whole is not None and split is not None
    assert split.components == whole.components and split.nodes == whole.nodes and len(split.nodes) == 4


class _FakeRecorder:
    """What ``capture.cache_keys`` uses of the recorder, with one compile window open."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.window: Any = type("W", (), {"key": "0/0"})()
        self._lazy: list[Any] = []
        self.aot_components = True

    def emit(self, r: Any) -> None:
        self.records.append(r)

    def current(self, tid: int) -> Any:
        return self.window

    def warn(self, message: str) -> None:
        self.records.append({"t": "warn", "msg": message})

    def warn_if_imported(self, module: str, message: str) -> None: ...

    def _key_of(self, compile_id: str | None, tid: int) -> str | None:
        return "0/0" if compile_id == "0/0" else None

    def rel(self, epoch_ns: float) -> float:
        return 1.0


def _trace_lookups() -> tuple[Any, _FakeRecorder, dict[str, dict[str, int]]]:
    from dynaprof.capture.cache_keys import CacheKeyHooks, TraceLookups

    rec = _FakeRecorder()
    counters: dict[str, dict[str, int]] = {}  # like torch's: "inductor" appears at its first count
    return TraceLookups(rec, CacheKeyHooks(rec), counters), rec, counters  # type: ignore[arg-type]


def _hash_artifact(t: Any, key: str) -> None:
    payload = json.dumps({"key": key, "components": _split(debug_lines())})
    t.on_trace("artifact", lambda: {"name": "fx_graph_cache_hash", "encoding": "json"}, lambda: payload)


def test_torch_24_lookups_take_their_outcome_from_the_counters() -> None:
    t, rec, counters = _trace_lookups()
    metrics = lambda: {"compile_id": "0/0"}  # noqa: E731
    t.on_trace("dynamo_start", dict, None)
    _hash_artifact(t, "fk1")
    counters["inductor"] = {"fxgraph_cache_miss": 1}  # torch counts the miss, then compiles
    t.on_trace("compilation_metrics", metrics, None)
    t.on_trace("dynamo_start", dict, None)
    _hash_artifact(t, "fk1")
    counters["inductor"]["fxgraph_cache_hit"] = 1
    _hash_artifact(t, "fk2")  # the next key resolves the one before; nothing counted for this one
    t.on_trace("compilation_metrics", metrics, None)
    t.on_trace("dynamo_start", dict, None)
    counters["inductor"]["fxgraph_cache_bypass"] = 2  # raised before any key: no artifact
    t.on_trace("compilation_metrics", metrics, None)
    lookups = [(r["key"], r["outcome"], r.get("cache_key"), len(r["parts"]), len(r["nodes"]))
               for r in rec.records if r["t"] == "cache_lookup"]  # fmt: skip
    assert lookups == [("0/0", "miss", "fk1", 8, 4), ("0/0", "hit", "fk1", 8, 4),
                       ("0/0", "bypass", None, 0, 0), ("0/0", "bypass", None, 0, 0)]  # fmt: skip
    markers = [r["name"] for r in rec.records if r["t"] == "span"]
    assert markers == ["fx_graph_cache_miss", "fx_graph_cache_hit", "fx_graph_cache_bypass", "fx_graph_cache_bypass"]


def test_torch_24_without_a_window_or_a_counted_outcome_says_nothing() -> None:
    t, rec, counters = _trace_lookups()
    rec.window = None
    _hash_artifact(t, "fk1")  # outside a compile: not read
    rec.window = type("W", (), {"key": "0/0"})()
    _hash_artifact(t, "fk2")
    counters["inductor"] = {"fxgraph_cache_hit": 1, "fxgraph_cache_miss": 1}  # two grew: which is unknown
    t.on_trace("compilation_metrics", dict, None)
    assert [r for r in rec.records if r["t"] == "cache_lookup"] == []


def test_a_torch_24_log_says_its_keys_have_no_outcome(tmp_path: Path) -> None:
    log = (DATA / "one_frame.log").read_text()
    ctx = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
    art = _record({"artifact": {"name": "fx_graph_cache_hash", "encoding": "json"}, **ctx},
                  json.dumps({"key": "fk", "components": _split(debug_lines())}))  # fmt: skip
    at = log.index("V1130 20:00:36.841000")
    path = tmp_path / "dedicated_log_torch_trace_x.log"
    path.write_text(log[:at] + art + log[at:])
    s = import_torch_trace(path)
    assert [lk.cache for lk in s.cache_keys.lookups] == ["dynamo"]  # no outcome is guessed
    assert [w for w in s.capture.warnings if "fx_graph_cache_hash" in w] == [
        "the log holds 1 FX graph cache key(s) (fx_graph_cache_hash, torch 2.4) without their outcome "
        "(2.4 counts hits and misses but does not log them): no FX graph cache lookups read"]


# -- AOTAutograd's components: computed with --aot-components, not by default -----------------


class _Pickler:
    """Stands in for torch's AOTAutograd pickler: ``debug_lines`` hashes each attribute."""

    def get_hash(self, obj: Any) -> str:
        return _h(repr(obj))

    def debug_lines(self, details: dict[str, Any]) -> list[str]:
        return [f"[{self.get_hash(v)}] {k}: {v}" for k, v in details.items()]


def _aot_lookup(aot_components: bool, torch_lines: list[str] | None = None) -> dict[str, Any]:
    """One AOTAutograd lookup through the hooks: torch's ``_get_debug_lines_for_cache_key`` (which
    gives ``torch_lines``, [] unless at DEBUG), then its instant event without components."""
    from dynaprof.capture.cache_keys import CacheKeyHooks, _hook_aot_debug_lines

    rec = _FakeRecorder()
    rec.aot_components = aot_components
    hooks = CacheKeyHooks(rec)  # type: ignore[arg-type]
    module = type("M", (), {"_get_debug_lines_for_cache_key": staticmethod(lambda p, d, k: torch_lines or [])})
    _hook_aot_debug_lines(rec, hooks, module)  # type: ignore[arg-type]
    out = module._get_debug_lines_for_cache_key(_Pickler(), {"aot_config": "x", "grad_enabled": False}, "ak1")
    assert out == (torch_lines or [])  # torch gets back what it computed
    hooks.on_instant("autograd_cache_miss", {"cache_state": "miss", "key": "ak1", "components": []})
    return next(r for r in rec.records if r["t"] == "cache_lookup")


def test_aot_components_are_computed_when_asked_and_not_by_default() -> None:
    assert len(_aot_lookup(True)["parts"]) == 2
    assert _aot_lookup(False)["parts"] == []  # the lookup is still recorded, without components
    at_debug = [f"[{_h('1')}] aot_config: 1"]
    assert len(_aot_lookup(False, at_debug)["parts"]) == 1  # torch's own (DEBUG logging) are kept


def test_the_run_option_reaches_the_child() -> None:
    import argparse

    from dynaprof.cli.run_options import add_run_options

    p = argparse.ArgumentParser()
    add_run_options(p)
    assert p.parse_args([]).aot_components is False
    assert p.parse_args(["--aot-components"]).aot_components is True
    assert p.parse_args(["--aot-components", "--no-aot-components"]).aot_components is False


def test_a_torch_that_gives_aot_components_itself_is_not_warned_of() -> None:
    """Torch 2.6 has no ``_get_debug_lines_for_cache_key`` and puts the components in its events:
    nothing to say; a lookup that comes without them is said once."""
    from dynaprof.capture.cache_keys import CacheKeyHooks, _hook_aot_debug_lines

    rec = _FakeRecorder()
    hooks = CacheKeyHooks(rec)  # type: ignore[arg-type]
    _hook_aot_debug_lines(rec, hooks, type("M", (), {"__name__": "autograd_cache"}))  # type: ignore[arg-type]
    hooks.on_instant("autograd_cache_miss", {"cache_state": "miss", "key": "a1", "components": debug_lines()})
    assert [r for r in rec.records if r["t"] == "warn"] == []
    for key in ("a2", "a3"):
        hooks.on_instant("autograd_cache_miss", {"cache_state": "miss", "key": key, "components": []})
    warns = [r["msg"] for r in rec.records if r["t"] == "warn"]
    assert len(warns) == 1 and "AOTAutograd cache key components not captured" in warns[0]


def test_an_aot_miss_without_components_names_the_option() -> None:
    from dynaprof.analysis.cache_misses import MissExplained

    aot = MissExplained("forward", "aot_autograd", "0/0", known=False).line()
    assert "--aot-components" in aot
    fx = MissExplained("forward", "fx_graph", "0/0", known=False).line()
    assert "--aot-components" not in fx and "no key components" in fx
