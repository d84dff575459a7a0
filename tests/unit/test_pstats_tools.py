"""cProfile tables: load/save round trip, merging, and the snakeviz reshaping."""

from __future__ import annotations

import cProfile
import marshal
import pstats
from pathlib import Path

import networkx as nx
import pytest

from dynaprof.analysis import pstats_tools as pt
from dynaprof.errors import DynaprofError
from dynaprof.ingest.prof_files import load_table
from dynaprof.run_folder import write_prof
from tests.helpers import CF, MOD, SC, dynamo_like, edge


def _fib(n: int) -> int:
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def _work() -> int:
    return sum(_fib(12) for _ in range(3)) + len(sorted(str(i) for i in range(200)))


def real_table() -> pt.PStatsTable:
    prof = cProfile.Profile()
    prof.enable()
    _work()
    prof.disable()
    prof.create_stats()
    return dict(prof.stats)  # type: ignore[attr-defined]


def test_round_trip_through_pstats(tmp_path: Path) -> None:
    table = real_table()
    path = write_prof.save_table(table, tmp_path / "x.prof")
    st = pstats.Stats(str(path))
    loaded = st.stats  # type: ignore[attr-defined]
    assert set(loaded) == set(table)
    for key, (cc, nc, tt, ct, callers) in table.items():
        lcc, lnc, ltt, lct, lcallers = loaded[key]
        assert (lcc, lnc) == (cc, nc)
        assert ltt == pytest.approx(tt) and lct == pytest.approx(ct)
        assert {k: tuple(v) for k, v in lcallers.items()} == {k: tuple(v) for k, v in callers.items()}
    fib = next(k for k in table if k[2] == "_fib")
    assert loaded[fib][1] > loaded[fib][0]  # recursion: total calls > primitive calls
    assert st.total_calls == sum(v[1] for v in table.values())  # type: ignore[attr-defined]
    assert load_table(path) == {k: (*v[:4], dict(v[4])) for k, v in table.items()}


def test_same_bytes_as_cprofile_writes(tmp_path: Path) -> None:
    prof = cProfile.Profile()
    prof.enable()
    _work()
    prof.disable()
    prof.dump_stats(str(tmp_path / "c.prof"))
    table = load_table(tmp_path / "c.prof")
    assert marshal.loads(pt.table_bytes(table)) == marshal.loads((tmp_path / "c.prof").read_bytes())
    assert pt.table_bytes(table) == pt.table_bytes(dict(reversed(list(table.items()))))  # deterministic


@pytest.mark.parametrize("content", [b"", b"not a profile", marshal.dumps([1, 2, 3]), marshal.dumps({("a", 1): 3})])
def test_corrupt_file_names_the_path(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bad.prof"
    bad.write_bytes(content)
    with pytest.raises(DynaprofError) as e:
        load_table(bad)
    assert str(bad) in e.value.message and e.value.exit_code == 2


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DynaprofError, match="no such cProfile file"):
        load_table(tmp_path / "nope.prof")


def test_merge_matches_pstats_add(tmp_path: Path) -> None:
    a, b = real_table(), real_table()
    write_prof.save_table(a, tmp_path / "a.prof")
    write_prof.save_table(b, tmp_path / "b.prof")
    ref = pstats.Stats(str(tmp_path / "a.prof"), str(tmp_path / "b.prof")).stats  # type: ignore[attr-defined]
    merged = pt.merge_tables([a, b])
    assert set(merged) == set(ref)
    for key in ref:
        assert merged[key][:2] == ref[key][:2]
        assert merged[key][2] == pytest.approx(ref[key][2]) and merged[key][3] == pytest.approx(ref[key][3])
        assert set(merged[key][4]) == set(ref[key][4])


# --- a Dynamo-like recursion, by hand ---------------------------------------------------------------


def test_reshape_makes_a_small_dag_rooted_at_compile() -> None:
    table = dynamo_like()
    raw = pt.snakeviz_hierarchy_size(table, limit=200_000)
    shaped = pt.reshape_for_snakeviz(table)
    g = nx.DiGraph([(c, k) for k, v in shaped.items() for c in v[4]])
    assert nx.is_directed_acyclic_graph(g)
    assert pt.snakeviz_root(shaped) == (CF, 1633, "_compile")
    assert (MOD, 1774, "_wrapped_call_impl") not in shaped  # restricted to the compile window
    assert shaped[(CF, 1633, "_compile")][4] == {}
    small = pt.snakeviz_hierarchy_size(shaped)
    assert raw > 20 * small, (raw, small)
    assert small < pt.SNAKEVIZ_NODE_BUDGET
    # the heaviest path stays whole: _compile -> run -> step -> h0 -> inline_call_
    assert (SC, 1556, "step") in shaped[(SC, 2000, "h0")][4]
    assert (SC, 2000, "h0") in shaped[(SC, 5953, "inline_call_")][4]
    assert (SC, 5953, "inline_call_") not in shaped[(SC, 1943, "run")][4]  # the recursion edge is gone
    assert table == dynamo_like()  # input untouched


def test_reshape_drops_invisible_edges_and_honours_budget() -> None:
    table = dynamo_like(10)
    shaped = pt.reshape_for_snakeviz(table, min_fraction=0.0, node_budget=50)
    assert pt.snakeviz_hierarchy_size(shaped) <= 50 or len(shaped) <= 3


def test_reshape_joins_several_roots() -> None:
    inner = (CF, 1699, "_compile_inner")
    a = {inner: (1, 1, 0.1, 1.0, {}), ("x.py", 1, "f"): (1, 1, 0.5, 0.5, {inner: edge(1, 0.5)})}
    b: pt.PStatsTable = {("y.py", 2, "g"): (1, 1, 0.3, 0.3, {})}
    shaped = pt.reshape_for_snakeviz({**a, **b}, roots=[(CF, 1699, "_compile_inner"), ("y.py", 2, "g")])
    assert pt.snakeviz_root(shaped) == pt.SYNTHETIC_ROOT
    assert shaped[pt.SYNTHETIC_ROOT][3] == pytest.approx(1.3)
    assert pt.compile_roots(a) == [(CF, 1699, "_compile_inner")]


def test_write_snakeviz_profile_keeps_original(tmp_path: Path) -> None:
    src = write_prof.save_table(dynamo_like(), tmp_path / "run.prof")
    before = src.read_bytes()
    out = write_prof.write_snakeviz_profile(src)
    assert out == tmp_path / "run.snakeviz.prof"
    assert src.read_bytes() == before
    st = pstats.Stats(str(out))
    assert st.stats  # type: ignore[attr-defined]
    snakeviz_stats = pytest.importorskip("snakeviz.stats")
    js = snakeviz_stats.json_stats(st)
    assert pt.func_label((CF, 1633, "_compile")) in js


def test_restrict_recomputes_from_remaining_callers() -> None:
    table = {
        ("a.py", 1, "root"): (1, 1, 0.1, 1.0, {}),
        ("a.py", 2, "other"): (1, 1, 0.1, 1.0, {}),
        ("a.py", 3, "shared"): (
            4,
            4,
            0.4,
            0.8,
            {("a.py", 1, "root"): edge(1, 0.2), ("a.py", 2, "other"): edge(3, 0.6)},
        ),
    }
    part = pt.restrict(table, [("a.py", 1, "root")])
    assert set(part) == {("a.py", 1, "root"), ("a.py", 3, "shared")}
    cc, nc, _tt, ct, callers = part[("a.py", 3, "shared")]
    assert (cc, nc, ct) == (1, 1, pytest.approx(0.2)) and list(callers) == [("a.py", 1, "root")]
