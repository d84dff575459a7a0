"""A cache fact is declared once, in ``model/cache_keys.py``: a cache is a row of ``CACHES``, a
lookup's optional fact a row of ``LOOKUP_FACTS``. The journal writer and reader, both importers,
the per-compile counts and the reports read those tables and name no cache and no fact, so a new
one needs its capture hook, its row and (to be shown) its renderer, nothing else (issue #34).

These tests declare a cache the code has never seen and follow it from the capture's record to
the session, its JSON, a TORCH_TRACE import and the reports; and round-trip every lookup fact."""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import dynaprof
from dynaprof.analysis.cache_misses import misses_in_run
from dynaprof.ingest.assemble import ParentFacts, assemble
from dynaprof.ingest.trace_to_session import import_torch_trace
from dynaprof.model import cache_keys
from dynaprof.model.cache import cache_totals
from dynaprof.model.cache_keys import (
    LOOKUP_FACTS,
    Cache,
    CacheLookup,
    CacheLookupRecord,
    KeyComponent,
    ParsedLookup,
    lookup_record,
    read_lookup,
)
from dynaprof.model.journal import JOURNAL_SCHEMA, RECORD_TYPES
from dynaprof.model.store import session_from_text, session_to_text
from dynaprof.render.cache_section import view
from dynaprof.render.markdown import summary_markdown
from tests.helpers import JOURNAL, TESTS_DIR, TID

PACKAGE = Path(dynaprof.__file__).parent
#: a cache no torch has: its markers, artifacts and counters are made up
FAKE = Cache("fake", "Fake cache", keyed=True, markers=("fake_cache_",), artifact="fake_cache_", counted=3,
             counters={"hit": ("fake_local_cache_hit_count",)})  # fmt: skip


def declare(monkeypatch: pytest.MonkeyPatch, cache: Cache) -> None:
    """``cache`` as a row of ``CACHES``: every table ``model.cache_keys`` derives from the rows is
    what it would be at import, in that module and wherever another module holds it by name."""
    old = {name: getattr(cache_keys, name) for name in cache_keys.tables(())}
    new = cache_keys.tables((*cache_keys.CACHES, cache))
    for module in [m for n, m in sys.modules.items() if n == "dynaprof" or n.startswith("dynaprof.")]:
        for attr, held in list(vars(module).items()):
            for name, value in new.items():
                if held is old[name]:
                    monkeypatch.setattr(module, attr, value)
    monkeypatch.setattr(cache_keys, "CACHES", (*cache_keys.CACHES, cache))


def _lookup(outcome: str, key: str, config: str, **facts: Any) -> ParsedLookup:
    comps = [KeyComponent("gm", "g1", "GraphModule()"), KeyComponent("fake_config[size]", config, config)]
    return ParsedLookup("fake", outcome, key=key, components=comps, **facts)


def _journal(lookups: list[ParsedLookup]) -> list[dict[str, Any]]:
    """The test journal with ``lookups`` of compile 0/0 written as the capture writes them, and
    one cache marker of each as torch's instant event."""
    ids: dict[KeyComponent, int] = {}
    written: list[dict[str, Any]] = []
    for lk in lookups:
        rec = lookup_record("0/0", lk, lambda c: ids.setdefault(c, len(ids)))
        written.append(dict(rec))
        written.append({"t": "span", "name": f"fake_cache_{lk.outcome}", "ph": "i", "tid": TID, "ts": 3.0,
                        "key": "0/0"})  # fmt: skip
    parts = {"t": "key_part", "items": [[i, c.name, c.hash, c.value] for c, i in ids.items()]}
    records = [dict(r) for r in JOURNAL]
    at = next(i for i, r in enumerate(records) if r["t"] == "metrics")
    records[at:at] = [parts, *written]
    return json.loads(json.dumps(records))  # as a journal line holds them


def test_a_cache_declared_in_the_model_reaches_the_session_and_the_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    declare(monkeypatch, FAKE)
    records = _journal([_lookup("miss", "k1", "c1", reason="a made-up reason"), _lookup("miss", "k2", "c2"),
                        _lookup("hit", "k2", "c2", time_saved_s=0.5)])  # fmt: skip
    s = assemble(iter(records), ParentFacts(command=["dynaprof", "run", "tiny.py"], exit_status=0))
    s = session_from_text(session_to_text(s))  # and through session.json
    fake = [lk for lk in s.cache_keys.lookups if lk.cache == "fake"]
    assert [(lk.frame, lk.outcome, lk.key, lk.reason, lk.time_saved_s) for lk in fake] == [
        ("0/0", "miss", "k1", "a made-up reason", None), ("0/0", "miss", "k2", None, None),
        ("0/0", "hit", "k2", None, 0.5)]  # fmt: skip
    assert [c.name for c in s.cache_keys.parts(fake[0])] == ["gm", "fake_config[size]"]
    # the per-compile counts, from its markers
    assert (s.frames[0].cache["fake"].hits, s.frames[0].cache["fake"].misses) == (1, 2)
    assert list(cache_totals(s.frames)) == ["fake"]
    # analysis: keyed, so the second miss is explained by the component that differs from the first
    assert [m.differences[0].name for m in misses_in_run(s)] == ["fake_config[size]"]
    # the reports: its label in the Cache section's rows and in the summary's cache line
    section = view(s)
    assert section is not None and [r[1] for r in section.rows if r[0] == "0/0"][1:] == ["Fake cache"] * 3
    assert "Fake cache: 1 hit, 2 misses" in summary_markdown(s)


def test_a_cache_declared_in_the_model_is_read_from_a_torch_trace_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    declare(monkeypatch, FAKE)
    payload = json.dumps({"cache_state": "miss", "key": "fk", "components": ["[h1] gm: GraphModule()"]})
    env = {"artifact": {"name": "fake_cache_miss", "encoding": "json"}, "frame_id": 0, "frame_compile_id": 0,
           "attempt": 0, "has_payload": hashlib.md5(payload.encode()).hexdigest()}  # fmt: skip
    record = "V1130 20:00:36.800000 11653 torch/_inductor/compile_fx.py:1151] " + json.dumps(env) + f"\n\t{payload}\n"
    log = (TESTS_DIR / "data" / "torch_trace" / "one_frame.log").read_text()
    at = log.index("V1130 20:00:36.841000")  # before the compile's metrics
    path = tmp_path / "dedicated_log_torch_trace_x.log"
    path.write_text(log[:at] + record + log[at:])
    s = import_torch_trace(path)
    fake = [lk for lk in s.cache_keys.lookups if lk.cache == "fake"]
    assert [(lk.frame, lk.outcome, lk.key) for lk in fake] == [("0/0", "miss", "fk")]
    assert [c.name for c in s.cache_keys.parts(fake[0])] == ["gm"]
    assert s.frames[0].cache["fake"].misses == 1


def _sample(fact: cache_keys.LookupFact) -> Any:
    """A value the fact's reader keeps as it is: a text, else a number."""
    for value in (f"{fact.attr} value", 1.25):
        if fact.read(value) == value:
            return value
    raise AssertionError(f"{fact.attr}: no sample value its reader keeps")


def test_every_lookup_fact_goes_from_the_capture_record_to_the_session() -> None:
    facts = {f.attr: _sample(f) for f in LOOKUP_FACTS}
    rec = lookup_record("0/0", ParsedLookup("fx_graph", "hit", **facts), lambda c: 0)
    assert {f.record for f in LOOKUP_FACTS} <= set(rec)
    records = [dict(r) for r in JOURNAL]
    at = next(i for i, r in enumerate(records) if r["t"] == "metrics")
    records.insert(at, json.loads(json.dumps(rec)))
    s = assemble(iter(records), ParentFacts(command=["dynaprof", "run", "tiny.py"], exit_status=0))
    again = session_from_text(session_to_text(s))
    got = next(lk for lk in again.cache_keys.lookups if lk.cache == "fx_graph")
    assert {attr: getattr(got, attr) for attr in facts} == facts
    # unset facts are not written, and read back as unknown
    bare = lookup_record("0/0", ParsedLookup("fx_graph", "miss", reason=""), lambda c: 0)
    assert not {f.record for f in LOOKUP_FACTS} & set(bare)
    parsed = read_lookup(bare, lambda ids: [])
    assert parsed is not None and all(getattr(parsed[1], f.attr) is None for f in LOOKUP_FACTS)


def test_the_lookup_facts_match_the_record_type_the_dataclasses_and_the_schema() -> None:
    assert RECORD_TYPES["cache_lookup"] is CacheLookupRecord
    assert [f.record for f in LOOKUP_FACTS] == sorted(CacheLookupRecord.__optional_keys__, key=[
        f.record for f in LOOKUP_FACTS].index)  # fmt: skip
    assert {f.record for f in LOOKUP_FACTS} == CacheLookupRecord.__optional_keys__
    for f in LOOKUP_FACTS:
        assert f.attr in ParsedLookup.__dataclass_fields__ and f.attr in CacheLookup.__dataclass_fields__
        assert f.since <= JOURNAL_SCHEMA


#: the modules that carry cache facts from the capture to a Session without naming any
GENERIC = ("model/journal.py", "model/cache.py", "ingest/assemble.py", "ingest/trace_to_session.py")
#: and those that write and read a lookup's record without naming its facts
FACT_BLIND = ("capture/cache_keys.py", "ingest/cache_keys.py", "ingest/assemble.py")


def _strings(path: Path) -> set[str]:
    return {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)}  # fmt: skip


@pytest.mark.parametrize("rel", GENERIC)
def test_the_journal_and_the_importers_name_no_cache(rel: str) -> None:
    names = {c.name for c in cache_keys.CACHES} - {"dynamo"}  # also Dynamo's span, and its phase group
    prefixes = tuple(p for c in cache_keys.CACHES for p in (*c.markers, c.artifact) if p)
    said = {s for s in _strings(PACKAGE / rel) if s in names or s.startswith(prefixes)}
    assert not said, f"{rel} names caches or their markers: {sorted(said)} (declare them in model/cache_keys.py)"


@pytest.mark.parametrize("rel", FACT_BLIND)
def test_the_lookup_record_writer_and_reader_name_no_fact(rel: str) -> None:
    keys = {f.record for f in LOOKUP_FACTS} - {"kernel", "reason"}  # words other records use too
    said = _strings(PACKAGE / rel) & keys
    assert not said, f"{rel} names lookup facts: {sorted(said)} (they are read through LOOKUP_FACTS)"
