"""``dynaprof run --repeat N``: N fresh processes with cold compiler caches, one
session holding every run's compile times, the report drawn from the median run."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from dynaprof.analysis.repeats import frame_medians, make_repeat, median, median_repeat, repeat_summary
from dynaprof.model import Repeat, load_session
from dynaprof.model.codec import from_json, to_json
from dynaprof.model.session import Session
from dynaprof.render.markdown import summary_markdown
from dynaprof.render.terminal import summary_text
from tests.conftest import run_dynaprof
from tests.factories import frame, make_session


def test_median_and_the_median_run() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([4.0, 1.0, 2.0, 3.0]) == 2.5
    with pytest.raises(ValueError):
        median([])
    assert median_repeat([3.0, 1.0, 2.0]) == 2  # the run with 2.0
    assert median_repeat([4.0, 1.0, 2.0, 3.0]) == 2  # even: the lower middle, a real run
    assert median_repeat([1.0, 1.0, 1.0]) == 1  # ties: the middle one in run order
    assert median_repeat([5.0]) == 0


def _repeated(times: list[float]) -> Session:
    s = make_session([frame("0/0", compile_time_s=times[1])])
    s.repeats = [Repeat(i, t, t + 1.0, 0, True, {"0/0": t, "1/0": t / 2 if i != 2 else None}, {"dynamo": t})
                 for i, t in enumerate(times, 1)]
    s.run.repeat = 2
    return s


def test_a_repeat_keeps_totals_frames_and_phases() -> None:
    s = make_session([frame("0/0", compile_time_s=1.5, phases={"dynamo": 1.5, "build_guards": 0.5}),
                      frame("1/0", compile_time_s=0.5, start_s=5.0, phases={"dynamo": 0.5})])
    r = make_repeat(3, s, cold=False)
    assert (r.index, r.compile_s, r.cold, r.exit_status) == (3, 2.0, False, s.run.exit_status)
    assert r.frames == {"0/0": 1.5, "1/0": 0.5}
    assert r.phases == {"build_guards": 0.5, "dynamo": 2.0}


def test_summary_and_per_frame_spread() -> None:
    s = _repeated([1.0, 2.0, 4.0])
    assert repeat_summary(s) == ("3 repeats, cold caches: compile median 2.00 s (1.00 s - 4.00 s, spread 150%); "
                                 "report from repeat 2 (the median)")
    assert frame_medians(s) == {"0/0": (2.0, 1.0, 4.0, 3), "1/0": (1.25, 0.5, 2.0, 2)}
    assert repeat_summary(make_session([frame("0/0")])) is None
    text = summary_text(s, 12, 100)
    assert "  3 repeats, cold caches: compile median 2.00 s" in text
    md = summary_markdown(s)
    assert "**Repeats:** 3 repeats, cold caches: compile median 2.00 s (1.00 s - 4.00 s, spread 150%)" in md
    assert "| 2 (this report) | 2.00 s | 3.00 s | 2 | cold | 0 |" in md
    assert "| 1/0 | 1.25 s | 500 ms | 2.00 s | 2 |" in md


def test_repeats_round_trip_and_older_sessions_have_none() -> None:
    s = _repeated([1.0, 2.0, 4.0])
    again = from_json(Session, to_json(s))
    assert again.repeats == s.repeats and again.run.repeat == 2
    data = to_json(make_session([frame("0/0")]))
    del data["repeats"], data["run"]["repeat"]
    old = from_json(Session, data)
    assert old.repeats == [] and old.run.repeat is None


def test_repeat_options_are_checked(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("print('ran')\n")
    for opts, words in ((["--repeat", "0"], "--repeat must be at least 1"),
                        (["--warm"], "--warm goes with --repeat N"),
                        (["--repeat", "2", "--sampler", "py-spy"], "does not combine")):
        proc = run_dynaprof(["run", "-q", "-o", "r", *opts, "x.py"], cwd=tmp_path)
        assert proc.returncode == 2 and words in proc.stderr and "ran" not in proc.stdout, (opts, proc.stderr)


SCRIPT = """
import os, torch
print("CACHE", repr(os.environ.get("TORCHINDUCTOR_CACHE_DIR")), repr(os.environ.get("TRITON_CACHE_DIR")),
      repr(os.environ.get("TMPDIR")))
@torch.compile(backend="eager")
def f(x):
    return x.cos() * 2
f(torch.randn(4))
"""


def _caches(stdout: str) -> list[tuple[str | None, str | None]]:
    return [tuple(ast.literal_eval(w) for w in line.split()[1:3])  # type: ignore[misc]
            for line in stdout.splitlines() if line.startswith("CACHE ")]


def _tmpdirs(stdout: str) -> list[str | None]:
    """Each run's TMPDIR (where Inductor keeps its precompiled header)."""
    return [ast.literal_eval(line.split()[3])
            for line in stdout.splitlines() if line.startswith("CACHE ")]


@pytest.mark.torch
def test_repeat_runs_fresh_processes_with_cold_caches(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    proc = run_dynaprof(["run", "-o", "r", "--repeat", "3", "job.py"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    caches = _caches(proc.stdout)
    assert len(caches) == 3 and len({c[0] for c in caches}) == 3 and len({c[1] for c in caches}) == 3
    assert all(c[0] and not Path(c[0]).exists() for c in caches)  # fresh for each run, removed after
    tmps = _tmpdirs(proc.stdout)
    assert len(set(tmps)) == 3 and all(t and not Path(t).exists() for t in tmps)
    s = load_session(tmp_path / "r")
    assert [r.index for r in s.repeats] == [1, 2, 3] and all(r.cold and r.exit_status == 0 for r in s.repeats)
    assert all(set(r.frames) == {"0/0"} and r.compile_s > 0 and r.causes for r in s.repeats)
    starts = [r.start_time or "" for r in s.repeats]  # each run's own start: compare tells blocks from alternation
    assert all(starts) and starts == sorted(starts) and len(set(starts)) == 3
    times = [r.compile_s for r in s.repeats]
    assert s.run.repeat == median_repeat(times) + 1
    assert s.total_compile_s == pytest.approx(sorted(times)[1], abs=1e-6)  # the frames are the median run's
    assert s.run.env is not None and "TORCHINDUCTOR_CACHE_DIR" not in s.run.env  # ours, not the user's
    assert not (tmp_path / "r" / "repeats").exists() and not list((tmp_path / "r").rglob("journal.jsonl"))
    assert "3 repeats, cold caches: compile median" in proc.stderr


@pytest.mark.torch
def test_repeats_farmed_out_to_workers_are_whole_runs_combined(tmp_path: Path) -> None:
    """``--executor local --workers 2``: each repeat a ``dynaprof run`` of its own on the executor
    (the run's options with it), its folder kept; one session of them, as ``--repeat`` makes."""
    (tmp_path / "job.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    proc = run_dynaprof(["run", "-o", "r", "--repeat", "3", "--rate", "250", "--executor", "local", "--workers", "2",
                         "job.py"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "2 runs at a time on one machine" in proc.stderr and "repeats/3 on the local executor: done" in proc.stderr
    caches = [c for i in (1, 2, 3) for c in _caches((tmp_path / "r" / "repeats" / f"{i}.log").read_text())]
    assert len(caches) == 3 and len({c[0] for c in caches}) == 3 and all(c[0] for c in caches)  # cold, each its own
    for i in (1, 2, 3):
        one = load_session(tmp_path / "r" / "repeats" / str(i))
        assert one.run.command[:2] == ["dynaprof", "run"] and "--rate" in one.run.command
        assert "--repeat" not in one.run.command and one.repeats == []
    s = load_session(tmp_path / "r")
    assert [r.index for r in s.repeats] == [1, 2, 3] and all(r.cold and r.exit_status == 0 for r in s.repeats)
    assert s.run.repeat == median_repeat([r.compile_s for r in s.repeats]) + 1
    assert "3 repeats, cold caches: compile median" in proc.stderr
    bad = run_dynaprof(["run", "-o", "x", "--repeat", "2", "--executor", "local", "--counterfactual", "job.py"],
                       cwd=tmp_path)
    assert bad.returncode == 2 and "does not combine" in bad.stderr


@pytest.mark.torch
def test_warm_repeats_keep_the_users_caches(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(SCRIPT)
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "mine")}
    env.pop("TRITON_CACHE_DIR", None)
    proc = run_dynaprof(["run", "-q", "-o", "r", "--repeat", "2", "--warm", "job.py"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert _caches(proc.stdout) == [(str(tmp_path / "mine"), None)] * 2
    s = load_session(tmp_path / "r")
    assert [r.cold for r in s.repeats] == [False, False]
    assert s.run.env is not None and s.run.env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")


def _single(compile_s: float) -> Session:
    return make_session([frame("0/0", compile_time_s=compile_s, phases={"dynamo": compile_s})])


def test_pooled_runs_are_repeats_drawn_from_the_run_nearest_the_median() -> None:
    from dynaprof.analysis.repeats import pool

    singles = [_single(t) for t in (3.0, 1.0, 2.0)]
    before = [len(s.repeats) for s in singles]
    out = pool(singles)
    assert [r.compile_s for r in out.repeats] == [3.0, 1.0, 2.0] and [r.index for r in out.repeats] == [1, 2, 3]
    assert out.run.repeat == 3 and out.frames[0].compile_time_s == 2.0  # the median run's frames
    assert not any(r.cold for r in out.repeats)  # single runs used the caches as they were
    assert [len(s.repeats) for s in singles] == before and singles[2].run.repeat is None  # inputs unchanged
    # a side made with --repeat brings all its runs; the drawn run is still a real one
    mixed = pool([_repeated([1.0, 2.0, 3.0]), _single(10.0)])
    assert [r.compile_s for r in mixed.repeats] == [1.0, 2.0, 3.0, 10.0]
    assert mixed.run.repeat in (2, 3) and mixed.repeats[mixed.run.repeat - 1].compile_s in (2.0, 3.0)
    assert pool([singles[0]]) is singles[0]
    with pytest.raises(ValueError):
        pool([])


def test_compare_pools_several_runs_per_side(tmp_path: Path) -> None:
    from dynaprof.model import save_session

    paths: dict[str, list[str]] = {"base": [], "new": []}
    for side, times in (("base", (1.0, 1.1, 0.9)), ("new", (2.0, 2.2, 1.9))):
        for i, t in enumerate(times):
            where = tmp_path / f"{side}{i}"
            where.mkdir()
            save_session(_single(t), where)
            paths[side].append(str(where))
    r = run_dynaprof(["compare", "--base", *paths["base"], "--new", *paths["new"], "-o", str(tmp_path / "out")],
                     cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "total compile: 1.00 s -> 2.00 s, x2.04" in r.stderr and "3 vs 3 runs; margin 10%): slower" in r.stderr
    assert "3 vs 3 runs" in (tmp_path / "out" / "compare.md").read_text()
    pr = run_dynaprof(["pr", "--base", *paths["base"], "--new", *paths["new"], "-o", str(tmp_path / "pr")],
                      cwd=tmp_path)
    assert pr.returncode == 0, pr.stderr
    comment = (tmp_path / "pr" / "comment.md").read_text()
    assert "3 vs 3 runs; margin 10%): slower" in comment.split("####")[0]  # the comment leads with the verdict
    bad = run_dynaprof(["compare", paths["base"][0], "--new", paths["new"][0]], cwd=tmp_path)
    assert bad.returncode == 2 and "--base RUN... --new RUN..." in bad.stderr and "Traceback" not in bad.stderr
    one = run_dynaprof(["compare", paths["base"][0]], cwd=tmp_path)
    assert one.returncode == 2 and "compare needs BASE and NEW (got 1 path)" in one.stderr
