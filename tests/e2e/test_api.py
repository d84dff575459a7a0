"""``dynaprof.profile``: in-process capture of a block, with the same outputs as ``dynaprof run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import dynaprof
from dynaprof.api import ProfileError
from tests.conftest import ROOT, run_dynaprof

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def fn(x: Any) -> Any:
    return torch.sin(x) * 2 + 1


_made = iter(range(10**6))


def _compiled() -> Any:
    """A compiled function with a code object of its own (Dynamo caches compiles per code)."""
    ns: dict[str, Any] = {"torch": torch}
    name = f"f{next(_made)}"
    exec(compile(f"def {name}(x):\n    return torch.sin(x) * 2 + 1\n", f"<{name}>", "exec"), ns)
    return torch.compile(ns[name], backend="eager")


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    torch._dynamo.reset()


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_block_writes_a_run_folder_like_run(tmp_path: Path) -> None:
    f = torch.compile(fn, backend="eager")
    x = torch.randn(8)
    with dynaprof.profile(tmp_path / "run") as prof:
        y1 = f(x)
        f(torch.randn(4, 4))  # a recompile
    assert torch.equal(y1, torch.sin(x) * 2 + 1)  # the program's behaviour is unchanged
    s = prof.session
    assert isinstance(s, dynaprof.Session)
    assert [fr.name for fr in s.frames] == ["fn", "fn"]
    assert all(fr.status == "ok" and fr.compile_time_s for fr in s.frames)
    assert s.samples is not None and s.samples.count > 0
    # profiled in-process: no command, no exit status, and the target says where
    assert s.run.command == [] and s.run.exit_status is None
    assert s.run.target.startswith("<in-process: test_api.py:") and s.run.complete
    run = tmp_path / "run"
    for name in ("session.json", "summary.txt", "summary.md", "report.html", "flame-traced.svg", "trace.json"):
        assert (run / name).is_file(), name
    assert not (run / "journal.jsonl").exists()
    assert "fn (test_api.py:" in prof.summary()
    assert (run / "summary.txt").read_text(encoding="utf-8") == prof.summary()
    assert [fr.key for fr in dynaprof.load_session(run).frames] == [fr.key for fr in s.frames]


def test_compiles_outside_the_block_are_not_recorded(tmp_path: Path) -> None:
    from dynaprof.capture.core import IN_PROCESS

    before, inside, after = _compiled(), _compiled(), _compiled()
    before(torch.randn(3))
    with dynaprof.profile(tmp_path / "a") as first:
        inside(torch.randn(3))
    after(torch.randn(3))  # hooks stay installed but inert: no window, nothing written
    assert IN_PROCESS.active is None and IN_PROCESS.recorder is not None
    assert not IN_PROCESS.recorder.unfinished()
    with dynaprof.profile(tmp_path / "b") as second:
        before(torch.randn(5, 5))
    assert len(first.session.frames) == 1 and len(second.session.frames) == 1
    # each block's session stands alone: its own torch version, hooks and function table
    for s in (first.session, second.session):
        assert s.run.torch_version and "compile_windows" in s.capture.hooks and s.functions
    assert first.session.frames[0].key != second.session.frames[0].key


def test_exception_propagates_and_the_profile_is_saved(tmp_path: Path) -> None:
    f = _compiled()
    prof = dynaprof.profile(tmp_path / "run")
    with pytest.raises(ValueError, match="boom"), prof:
        f(torch.randn(3))
        raise ValueError("boom")
    assert prof.session.run.end_reason == "exception"
    assert len(prof.session.frames) == 1
    assert (tmp_path / "run" / "report.html").is_file()


def test_nested_profile_is_refused(tmp_path: Path) -> None:
    with dynaprof.profile(tmp_path / "outer"), pytest.raises(ProfileError, match="already active"):
        dynaprof.profile(tmp_path / "inner").start()
    assert not (tmp_path / "inner").exists()  # refused before touching the disk
    with dynaprof.profile(tmp_path / "again") as prof:  # the outer one ended cleanly
        _compiled()(torch.randn(2))
    assert len(prof.session.frames) == 1


def test_compiles_on_other_threads_inside_the_block_are_captured(tmp_path: Path) -> None:
    f = _compiled()
    with dynaprof.profile(tmp_path / "run") as prof:
        t = threading.Thread(target=lambda: f(torch.randn(6)), name="worker-7")
        t.start()
        t.join()
    [frame] = prof.session.frames
    assert frame.thread_name == "worker-7"


def test_existing_folder_refused_unless_force(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "keep.txt").write_text("mine")
    with pytest.raises(ProfileError, match=r"is not empty; pass force=True"):
        dynaprof.profile(run).start()
    with dynaprof.profile(run, force=True) as prof:
        _compiled()(torch.randn(2))
    assert (run / "keep.txt").read_text() == "mine" and (run / "session.json").is_file()
    assert len(prof.session.frames) == 1
    with pytest.raises(ProfileError, match="is not a folder"):
        dynaprof.profile(run / "keep.txt").start()


def test_default_folder_is_new_under_dynaprof_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with dynaprof.profile() as a:
        pass
    with dynaprof.profile() as b:
        pass
    assert a.run_dir is not None and b.run_dir is not None and a.run_dir != b.run_dir
    for p in (a, b):
        assert p.run_dir is not None and p.run_dir.parent == (tmp_path / "dynaprof-runs").resolve()
        assert p.run_dir.name.startswith("test_api-") and (p.run_dir / "session.json").is_file()
    assert "no torch.compile compilation happened" in a.summary()


def test_start_stop_and_decorator(tmp_path: Path) -> None:
    f = _compiled()
    prof = dynaprof.profile(tmp_path / "ss").start()
    assert prof.running
    f(torch.randn(7))
    session = prof.stop()
    assert not prof.running and len(session.frames) == 1 and prof.session is session

    deco = dynaprof.profile(tmp_path / "deco")

    @deco
    def work(n: int) -> int:
        _compiled()(torch.randn(n))
        return n * 2

    assert work(3) == 6 and work.__name__ == "work"
    assert len(deco.session.frames) == 1 and (tmp_path / "deco" / "session.json").is_file()


def test_misuse_is_a_clear_profile_error(tmp_path: Path) -> None:
    assert issubclass(ProfileError, dynaprof.DynaprofError)
    with pytest.raises(ProfileError, match="rate must be between"):
        dynaprof.profile(rate=0)
    with pytest.raises(ProfileError, match="py-spy attaches from outside"):
        dynaprof.profile(sampler="py-spy")  # type: ignore[arg-type]
    prof = dynaprof.profile(tmp_path / "x")
    with pytest.raises(ProfileError, match="not running"):
        prof.stop()
    with pytest.raises(ProfileError, match="no profile yet"):
        _ = prof.session
    with prof, pytest.raises(ProfileError, match="already running"):
        prof.start()


def test_import_dynaprof_loads_nothing_extra(tmp_path: Path) -> None:
    proc = _python(
        """
        import json, sys
        import dynaprof
        loaded = sorted(m for m in sys.modules if m.startswith("dynaprof"))
        assert callable(dynaprof.profile) and dynaprof.Session.__name__ == "Session"
        print(json.dumps([loaded, "torch" in sys.modules, sorted(dynaprof.__all__)]))
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    loaded, torch_loaded, public = json.loads(proc.stdout)
    assert loaded == ["dynaprof"] and not torch_loaded
    assert {"profile", "Session", "load_session", "check_budgets", "Budget"} <= set(public)


def test_dynamo_imported_after_the_block_starts_is_hooked(tmp_path: Path) -> None:
    proc = _python(
        """
        import sys
        import dynaprof
        with dynaprof.profile("run") as prof:
            assert "torch" not in sys.modules
            import torch
            torch.compile(lambda x: x.cos() + 1, backend="eager")(torch.randn(4))
        print(len(prof.session.frames), prof.session.samples.count > 0)
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "True"]


def test_profile_inside_dynaprof_run_is_refused_and_the_run_records_all(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent(
        """
        import torch, dynaprof
        try:
            with dynaprof.profile("inner"):
                pass
        except dynaprof.ProfileError as e:
            print("refused:", e)
        torch.compile(lambda x: x + 1, backend="eager")(torch.randn(2))
        """
    ))
    proc = run_dynaprof(["run", "-q", "-o", str(tmp_path / "run"), str(script)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "refused: dynaprof.profile(): this process is already profiled by `dynaprof run`" in proc.stdout
    assert not (tmp_path / "inner").exists()
    assert len(dynaprof.load_session(tmp_path / "run").frames) == 1


def test_a_forked_child_is_not_profiled(tmp_path: Path) -> None:
    proc = _python(
        """
        import os, torch, dynaprof
        with dynaprof.profile("run") as prof:
            torch.compile(lambda x: x + 1, backend="eager")(torch.randn(2))
            pid = os.fork()
            if pid == 0:
                torch.compile(lambda x: x * 3, backend="eager")(torch.randn(2))
                os._exit(0)
            os.waitpid(pid, 0)
        print(len(prof.session.frames))
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1"]  # the parent's compile only; the child wrote nothing
    assert dynaprof.load_session(tmp_path / "run").run.complete


def test_a_second_block_names_its_traced_functions_from_its_own_table(tmp_path: Path) -> None:
    """Each block has its own function table: the traced stack's hooks, installed once, must push
    the new table's ids, or the second block's traced frames name the first block's functions."""
    ns: dict[str, Any] = {"torch": torch}
    exec(compile("def helper_b(x):\n" + "".join("    x = torch.sin(x) * 2 + 1\n" for _ in range(40))
                 + "    return x\ndef outer_b(x):\n    return helper_b(x) + 1\n", "<blocks>", "exec"), ns)
    first_fn = _compiled()
    with dynaprof.profile(tmp_path / "a", rate=2000):
        first_fn(torch.randn(3))
    with dynaprof.profile(tmp_path / "b", rate=2000) as second:
        torch.compile(ns["outer_b"], backend="eager")(torch.randn(3))
    s = second.session
    assert s.samples is not None
    traced = {s.functions[i].name for st in s.samples.stacks for i in st.traced}
    assert traced & {"helper_b", "outer_b"}, traced
    assert first_fn.__name__ not in traced, traced  # a stale table's id would name the first block's function
