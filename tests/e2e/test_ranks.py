"""Multi-rank (torchrun) jobs: merging rank sessions, divergences, the merged view, the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dynaprof.analysis.ranks import merge_ranks, odd_ones, rank_list, summary_to_json
from dynaprof.capture import ranks as cr
from dynaprof.cli import build_parser, main, ranks_support
from dynaprof.model import CompiledFrame, Session, load_session, save_session
from dynaprof.model.store import rank_dir_name
from dynaprof.render.html_toolkit import CSP
from dynaprof.render.ranks import ranks_html, ranks_markdown, ranks_text, render_ranks
from tests.conftest import ROOT, run_dynaprof
from tests.factories import frame, make_session
from tests.helpers import HOSTILE_HTML as HOSTILE
from tests.helpers import assert_tables_well_formed, parse, unwrap


def ranked(rank: int, world: int, frames: list[CompiledFrame]) -> Session:
    s = make_session(frames)
    s.run.rank, s.run.world_size = rank, world
    return s


def fwd(key: str = "0/0", start: float = 1.0, **kw: object) -> CompiledFrame:
    return frame(key, name="forward", filename=f"/rank{kw.pop('r', 0)}/model.py", lineno=10, start_s=start, **kw)


def job(tmp: Path, sessions: dict[int, Session]) -> Path:
    for r, s in sessions.items():
        save_session(s, tmp / rank_dir_name(r))
    return tmp


# ---------------------------------------------------------------------------------------------
# analysis


def test_extra_compile_on_one_rank_is_flagged_on_that_rank_only() -> None:
    s0 = ranked(0, 2, [fwd(compile_time_s=1.0)])
    s1 = ranked(1, 2, [fwd(compile_time_s=1.0, r=1),
                       frame("1/0", name="extra_fn", filename="/rank1/model.py", lineno=30, start_s=3.0,
                             compile_time_s=0.5)])
    m = merge_ranks({0: s0, 1: s1})
    assert m.world_size == 2 and [t.rank for t in m.ranks] == [0, 1] and not m.missing_ranks
    assert [(t.frames, t.compile_s) for t in m.ranks] == [(1, 1.0), (2, 1.5)]
    assert m.slowest == 1 and m.fastest == 0 and m.spread_s == pytest.approx(0.5)
    [d] = m.divergences  # forward matches across ranks although the folders differ (basename + order)
    assert (d.kind, d.name, d.filename, d.lineno, d.occurrence) == ("missing", "extra_fn", "model.py", 30, None)
    assert d.ranks == [1] and d.values == {0: 0, 1: 1} and d.compile_ids == {1: "1/0"}
    assert d.message == "extra_fn (model.py:30) compiled only on rank 1, not on rank 0"
    assert "1 divergence between ranks" in m.headline and "rank 1, slowest" in m.headline


def test_missing_compile_on_a_minority_names_the_ranks_without_it() -> None:
    sessions = {r: ranked(r, 4, [fwd()] if r == 2 else [fwd(), frame("1/0", name="g", start_s=2.0)])
                for r in range(4)}
    [d] = merge_ranks(sessions).divergences
    assert d.kind == "missing" and d.ranks == [2]
    assert d.message == "g (repro.py:11) not compiled on rank 2 (compiled on ranks 0, 1, 3)"


def test_different_guard_counts_flag_the_odd_rank() -> None:
    sessions = {r: ranked(r, 3, [fwd(guard_count=135 if r == 2 else 120)]) for r in range(3)}
    [d] = merge_ranks(sessions).divergences
    assert (d.kind, d.occurrence, d.ranks) == ("guards", 0, [2])
    assert d.values == {0: 120, 1: 120, 2: 135}
    assert d.message == "forward (model.py:10): 135 guards on rank 2; 120 guards on ranks 0, 1"


def test_recompiles_graph_breaks_status_and_graph_size_are_compared_per_compile() -> None:
    s0 = ranked(0, 2, [fwd("0/0", 1.0, graph_breaks=0, graph_op_count=5), fwd("0/1", 2.0)])
    s1 = ranked(1, 2, [fwd("0/0", 1.0, graph_breaks=1, graph_op_count=7), fwd("0/1", 2.0, status="failed"),
                       fwd("0/2", 3.0)])
    kinds = [(d.kind, d.occurrence, d.ranks) for d in merge_ranks({0: s0, 1: s1}).divergences]
    # most serious first; on a 1-1 tie the group holding rank 0 is the reference
    assert kinds == [("recompiles", None, [1]), ("status", 1, [1]), ("graph_breaks", 0, [1]), ("graph_ops", 0, [1])]
    rec = merge_ranks({0: s0, 1: s1}).divergences[0]
    assert rec.message == "forward (model.py:10) compiled 3 times on rank 1; twice on rank 0"
    assert "2nd compile: failed on rank 1; ok on rank 0" in merge_ranks({0: s0, 1: s1}).divergences[1].message


def test_identical_ranks_and_unknown_values_do_not_diverge() -> None:
    sessions = {r: ranked(r, 2, [fwd(guard_count=None if r else 50, compile_time_s=1.0 + r)]) for r in range(2)}
    m = merge_ranks(sessions)
    assert m.divergences == [] and m.slowest == 1
    assert "no divergence" in m.headline


def test_missing_rank_sessions_and_world_size() -> None:
    m = merge_ranks({0: ranked(0, 4, [fwd()]), 2: ranked(2, 4, [fwd()])})
    assert m.world_size == 4 and m.missing_ranks == [1, 3]
    assert "no session from ranks 1, 3" in m.headline
    assert merge_ranks({}).ranks == [] and merge_ranks({}).slowest is None


def test_slowest_rank_ties_go_to_the_lowest_rank() -> None:
    m = merge_ranks({r: ranked(r, 3, [fwd(compile_time_s=2.0 if r else 1.0)]) for r in range(3)})
    assert (m.slowest, m.fastest, m.spread_s) == (1, 0, 1.0)


def test_helpers() -> None:
    assert rank_list([3]) == "rank 3" and rank_list([0, 1]) == "ranks 0, 1"
    assert rank_list([5, 0, 2, 3, 4, 7, 8]) == "ranks 0, 2-5, 7, 8"
    assert odd_ones({0: 1, 1: 1, 2: 2}) == [2] and odd_ones({0: 1, 1: 2}) == [1] and odd_ones({0: 1}) == []
    assert odd_ones({0: "a", 1: "b", 2: "b"}) == [0]


def test_summary_json_round_trips() -> None:
    s1 = ranked(1, 2, [fwd(guard_count=3)])
    m = merge_ranks({0: ranked(0, 2, [fwd()]), 1: s1})
    data = json.loads(json.dumps(summary_to_json(m)))
    assert data["format"] == "dynaprof-ranks/1" and data["slowest"] == 0
    assert data["divergences"][0]["values"] == {"0": 100, "1": 3}


# ---------------------------------------------------------------------------------------------
# capture helpers


def test_rank_env_detection() -> None:
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "TORCHELASTIC_RUN_ID": "abc"}
    assert cr.rank_env(env) == cr.RankEnv(1, 2, 1, "abc", 0, False)
    assert cr.rank_env({}) is None and cr.rank_env({"RANK": "0", "WORLD_SIZE": "1"}) is None
    assert cr.rank_env({"RANK": "0", "WORLD_SIZE": "1", cr.LAUNCHER_ENV: "1"}) == cr.RankEnv(0, 1, launcher=True)
    assert cr.rank_env({"RANK": "x", "WORLD_SIZE": "2"}) is None
    assert cr.rank_env({"RANK": "2", "WORLD_SIZE": "2"}) is None
    assert cr.inside_torchrun({"TORCHELASTIC_RUN_ID": "x"}) and not cr.inside_torchrun({})
    assert cr.parse_rank_dir("rank-12") == 12 and cr.parse_rank_dir("rank-x") is None
    assert rank_dir_name(3) == "rank-3"


def test_shared_run_name_is_the_same_on_every_rank() -> None:
    uuid = "5d1c0b53-9f1e-4c68-a1f7-0123456789ab"
    names = {cr.shared_run_name("train", cr.RankEnv(r, 4, run_id=uuid)) for r in range(4)}
    assert names == {"train-5d1c0b53"}
    assert cr.shared_run_name("t", cr.RankEnv(0, 2, run_id="my job/1", restart_count=2)) == "t-my_job_1-restart2"
    none = {cr.shared_run_name("t", cr.RankEnv(r, 2, run_id="none"), parent_pid=os.getpid()) for r in range(2)}
    assert len(none) == 1 and re.fullmatch(rf"t-(\d{{8}}-\d{{6}}-)?p{os.getpid()}", none.pop())


def test_torchrun_command_and_forwarded_options(tmp_path: Path) -> None:
    args = build_parser().parse_args(["run", "--nproc-per-node", "2", "-o", "out", "--sampler", "none", "-q",
                                      "--max-rows", "7", "--torch-trace", "tt", "s.py", "--lr", "1"])
    opts = ranks_support.forwarded_options(args)
    assert opts == ["--sampler", "none", "--torch-trace", str(Path("tt").resolve()), "--quiet", "--max-rows", "7"]
    cmd = cr.torchrun_command("2", tmp_path, opts, ["s.py", "--lr", "1"], python="py")
    assert cmd == ["py", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "dynaprof",
                   "run", "-o", str(tmp_path), *opts, "s.py", "--lr", "1"]
    assert cr.check_nproc(" 4") == "4" and cr.check_nproc("GPU") == "gpu"
    with pytest.raises(ValueError):
        cr.check_nproc("0")


def test_shortcut_refuses_inside_torchrun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.py").write_text("pass\n")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "x")
    monkeypatch.delenv("RANK", raising=False)
    assert main(["run", "--nproc-per-node", "2", "-o", str(tmp_path / "o"), str(tmp_path / "s.py")]) == 2
    assert "already inside a torchrun job" in capsys.readouterr().err
    monkeypatch.delenv("TORCHELASTIC_RUN_ID")
    assert main(["run", "--nproc-per-node", "zero", "-o", str(tmp_path / "o"), str(tmp_path / "s.py")]) == 2


# ---------------------------------------------------------------------------------------------
# rendering


def test_merged_view_escapes_user_text_and_links_rank_reports() -> None:
    bad = frame("1/0", name=HOSTILE, filename="/w/<evil>.py", lineno=3, start_s=2.0)
    s1 = ranked(1, 2, [fwd(), bad])
    s1.run.hostname = HOSTILE
    m = merge_ranks({0: ranked(0, 2, [fwd()]), 1: s1})
    page = ranks_html(m)
    assert "<img" not in page and "<script>alert" not in page
    c = parse(page)
    assert ("meta", "content", CSP) in c.attrs
    links = sorted(url for tag, _, url in c.urls if not url.startswith("#"))
    assert all(tag == "a" for tag, _, _ in c.urls)
    assert links == ["rank-0/report.html", "rank-0/summary.md", "rank-1/report.html", "rank-1/summary.md"]
    md = ranks_markdown(m)
    assert "<img" not in md and "<script" not in md and "(rank-1/report.html)" in md
    assert assert_tables_well_formed(md) == 2
    text = ranks_text(m)
    assert "\x1b" not in text and "compiled only on rank 1" in text and "slowest: rank" in text
    assert set(render_ranks(m)) == {"ranks.md", "ranks.html", "ranks.json"}


# ---------------------------------------------------------------------------------------------
# CLI on hand-built rank folders


def test_maybe_write_merged_waits_for_every_rank(tmp_path: Path) -> None:
    job(tmp_path, {0: ranked(0, 2, [fwd()])})
    assert ranks_support.is_multi_rank_dir(tmp_path) and not ranks_support.is_multi_rank_dir(tmp_path / "rank-0")
    assert ranks_support.maybe_write_merged(tmp_path, 2) is None and not (tmp_path / "ranks.md").exists()
    job(tmp_path, {1: ranked(1, 2, [fwd(guard_count=7)])})
    m = ranks_support.maybe_write_merged(tmp_path, 2)
    assert m is not None and [d.kind for d in m.divergences] == ["guards"]
    assert json.loads((tmp_path / "ranks.json").read_text())["divergences"][0]["ranks"] == [1]
    before = (tmp_path / "ranks.html").read_text()
    ranks_support.maybe_write_merged(tmp_path, 2)  # a second writer: same bytes
    assert (tmp_path / "ranks.html").read_text() == before


def test_report_rerenders_every_rank_and_the_merged_view(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job(tmp_path, {0: ranked(0, 2, [fwd()]), 1: ranked(1, 2, [fwd(), frame("1/0", name="g", start_s=2.0)])})
    assert main(["report", str(tmp_path)]) == 0
    err = unwrap(capsys.readouterr().err)
    for r in (0, 1):
        assert (tmp_path / f"rank-{r}" / "report.html").exists() and (tmp_path / f"rank-{r}" / "summary.md").exists()
    assert "g (repro.py:11) compiled only on rank 1" in (tmp_path / "ranks.md").read_text()
    assert "merged view" in err and "dynaprof: rank 1: exited 0, 2 compiled frames" in err
    out = tmp_path.parent / (tmp_path.name + "-out")
    assert main(["report", str(tmp_path), "-o", str(out), "-q"]) == 0
    assert (out / "rank-1" / "report.html").exists() and (out / "ranks.html").exists()


def test_compare_multi_rank_runs_rank_by_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = job(tmp_path / "base", {r: ranked(r, 2, [fwd(compile_time_s=1.0)]) for r in range(2)})
    new = job(tmp_path / "new", {0: ranked(0, 2, [fwd(compile_time_s=2.0)]),
                                 1: ranked(1, 2, [fwd(compile_time_s=1.0), frame("1/0", name="g", start_s=3.0)])})
    out = tmp_path / "cmp"
    assert main(["compare", str(base), str(new), "-o", str(out)]) == 0
    err = unwrap(capsys.readouterr().err)
    assert "rank 0: compile time 1.00 s -> 2.00 s" in err and "0 in BASE, 1 in NEW" in err
    assert (out / "rank-0" / "compare.html").exists() and (out / "rank-1" / "compare.md").exists()
    index = (out / "compare.md").read_text()
    assert "(rank-1/compare.md)" in index and assert_tables_well_formed(index) == 1
    one = tmp_path / "one"
    assert main(["compare", "--rank", "1", str(base), str(new), "-o", str(one)]) == 0
    assert "1 only in NEW" in (one / "compare.md").read_text()
    assert main(["compare", "--rank", "5", str(base), str(new), "-o", str(tmp_path / "x")]) == 2


# ---------------------------------------------------------------------------------------------
# real torchrun (gloo on CPU)

SCRIPT = textwrap.dedent("""\
    import torch, torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()

    @torch.compile(backend="eager")
    def step(x):
        return x.sin() + 1

    @torch.compile(backend="eager")
    def extra_fn(x):
        return x.cos() * 2

    x = torch.ones(8)
    y = step(x)
    if rank == 1:
        y = y + extra_fn(x)
    dist.all_reduce(y)
    dist.destroy_process_group()
    print(f"rank {rank} done")
""")


def _assert_job(out: Path) -> None:
    sessions = {r: load_session(out / f"rank-{r}") for r in range(2)}
    for r, s in sessions.items():
        assert (s.run.rank, s.run.world_size, s.run.exit_status) == (r, 2, 0)
        assert (out / f"rank-{r}" / "report.html").exists()
    assert [f.name for f in sessions[0].frames] == ["step"]
    assert sorted(f.name for f in sessions[1].frames) == ["extra_fn", "step"]
    data = json.loads((out / "ranks.json").read_text())
    assert [(d["kind"], d["name"], d["ranks"]) for d in data["divergences"]] == [("missing", "extra_fn", [1])]
    assert re.fullmatch(r"extra_fn \(train\.py:\d+\) compiled only on rank 1, not on rank 0",
                        data["divergences"][0]["message"])
    assert "extra\\_fn (train.py:" in (out / "ranks.md").read_text()
    assert (out / "ranks.html").exists()


@pytest.mark.torch
def test_nproc_per_node_shortcut_profiles_every_rank(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    out = tmp_path / "job"
    proc = run_dynaprof(["run", "--nproc-per-node", "2", "-o", str(out), "--sampler", "none", "train.py"],
                        cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "rank 0 done" in proc.stdout and "rank 1 done" in proc.stdout  # the script owns stdout
    _assert_job(out)
    err = unwrap(proc.stderr)
    assert err.count("(merged view)") == 1 and "dynaprof: rank 1 of 2: exited 0, 2 compiled frames" in err
    assert "compiled only on rank 1" in err and "slowest: rank" in err
    assert "dynaprof: torch.compile" not in err  # no per-rank full summaries


@pytest.mark.torch
def test_plain_torchrun_writes_rank_folders_and_rank0_prints_the_merged_view(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    out = tmp_path / "job"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "-m", "dynaprof", "run", "-o", str(out), "--sampler", "none", "train.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    _assert_job(out)
    assert proc.stderr.count("(merged view)") == 1  # printed by rank 0 once every rank saved


def test_shortcut_returns_torchruns_exit_status(tmp_path: Path) -> None:
    """No torch in the script (fast): rank 1 fails, torchrun reports it, the merged view is written."""
    (tmp_path / "s.py").write_text("import os, sys\nsys.exit(3 if os.environ['RANK'] == '1' else 0)\n")
    out = tmp_path / "job"
    proc = run_dynaprof(["run", "--nproc-per-node", "2", "-o", str(out), "s.py"], cwd=tmp_path, timeout=120)
    assert proc.returncode == 1, proc.stderr  # torchrun's status for a failed worker
    assert load_session(out / "rank-1").run.exit_status == 3
    assert json.loads((out / "ranks.json").read_text())["ranks"][1]["exit_status"] == 3


# ---------------------------------------------------------------------------------------------
# desync diagnostics and per-rank TORCH_TRACE logs


def test_desync_flags_compile_ids_cache_outcomes_and_collectives() -> None:
    from dynaprof.analysis.rank_desync import desync_divergences
    from dynaprof.model.session import CacheStats

    def mk(cid: str, hits: int, coll: list[str] | None) -> CompiledFrame:
        f = fwd(cid)
        f.cache = {"fx_graph": CacheStats(hits=hits, misses=1 - hits)}
        f.collectives = coll
        return f

    ops = "torch.ops._c10d_functional."
    ar, ag = ops + "all_reduce.default", ops + "all_gather_into_tensor.default"
    sessions = {0: ranked(0, 3, [mk("0/0", 0, [ar, ag])]), 1: ranked(1, 3, [mk("0/0", 0, [ar, ag])]),
                2: ranked(2, 3, [mk("1/0", 1, [ag, ar])])}  # fmt: skip
    by_kind = {d.kind: d for d in desync_divergences(sessions)}
    assert set(by_kind) == {"collectives", "compile_ids", "cache"}
    assert all(d.ranks == [2] for d in by_kind.values())
    assert "[all_gather_into_tensor -> all_reduce] on rank 2" in by_kind["collectives"].message
    assert "compile id 1/0 on rank 2; compile id 0/0 on ranks 0, 1" in by_kind["compile_ids"].message
    assert "FX graph cache: 1 hit on rank 2" in by_kind["cache"].message
    same = {r: ranked(r, 2, [mk("0/0", 0, [ar])]) for r in (0, 1)}
    assert desync_divergences(same) == []
    unknown = {0: ranked(0, 2, [mk("0/0", 0, None)]), 1: ranked(1, 2, [mk("0/0", 0, [ar])])}
    assert desync_divergences(unknown) == []  # a log without a collective schedule is unknown, not different


def test_report_on_a_folder_of_rank_logs_writes_the_multi_rank_view(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    logs = ROOT / "tests" / "data" / "torch_trace" / "ranks_nosuffix"
    out = tmp_path / "out"
    assert main(["report", str(logs), "-o", str(out)]) == 0
    err = unwrap(capsys.readouterr().err)
    for r in (0, 1):
        s = load_session(out / f"rank-{r}")
        assert s.run.rank == r and s.capture.source == "torch_trace" and s.frames
        assert (out / f"rank-{r}" / "report.html").exists()
    merged = json.loads((out / "ranks.json").read_text())
    assert [t["rank"] for t in merged["ranks"]] == [0, 1] and merged["world_size"] == 2
    assert "rank 1 (dedicated_log_torch_trace_rank_1.log.gz): log complete" in err and "merged view" in err
    one = tmp_path / "one"
    assert main(["report", str(logs), "--rank", "1", "-o", str(one), "-q"]) == 0
    assert load_session(one).run.rank == 1 and not (one / "ranks.json").exists()
    assert main(["report", str(logs), "--rank", "5", "-o", str(tmp_path / "none"), "-q"]) == 2
    assert "no TORCH_TRACE log for rank 5 (ranks found: 0, 1)" in capsys.readouterr().err


def test_a_ranks_backward_compiles_are_not_counted_as_recompiles() -> None:
    """A DDP job compiles one backward per bucket (``4/0:bw`` ... ``4/0:bw4``): they share their
    forward's code but are not recompiles of it."""
    from dynaprof.analysis.ranks import rank_totals
    from tests.factories import frame, make_session

    fwd = frame("4/0")
    bws = [frame(f"4/0:bw{n if n > 1 else ''}", kind="backward", forward_key="4/0", compile_id="4/0")
           for n in range(1, 5)]
    assert rank_totals(0, make_session([fwd, *bws])).recompiles == 0
    assert rank_totals(0, make_session([fwd, frame("4/1", compile_id="4/1"), *bws])).recompiles == 1
