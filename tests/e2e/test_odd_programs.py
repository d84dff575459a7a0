"""Programs that do unusual things around torch.compile still give a valid, truthful session.

Two real runs shared by the checks (eager backend, CPU), plus one for a fork with --cprofile:

* ``threads_and_profilers.py`` (with ``--cprofile``): compiles on three threads released together,
  a compile inside the script's own cProfile, and one inside ``torch.profiler``;
* ``odd.py``: ten ``torch._dynamo.reset()`` generations, a backend that raises, recursion Dynamo
  inlines 60 levels deep, ``os.fork()`` (the child compiles too), and ``os._exit`` at the end.

A script with no compile at all is covered by tests/e2e/test_run_semantics.py.
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
from pathlib import Path

import pytest

from dynaprof.model import CompiledFrame, Session, load_session
from tests.conftest import CliResult, profile
from tests.helpers import unwrap

pytestmark = pytest.mark.torch

THREADS_AND_PROFILERS = """
import cProfile, io, pstats, sys, threading
import torch

def heavy(x):
    for _ in range(30):
        x = torch.sin(x) + torch.cos(x) * 2
    return x

N = 3
barrier = threading.Barrier(N)
idents = {}

def work(i):
    def fn(x):
        return heavy(x) + i
    fn.__code__ = fn.__code__.replace(co_name=f"thread_fn_{i}", co_qualname=f"thread_fn_{i}")
    barrier.wait()  # all three ask Dynamo to compile at the same moment
    torch.compile(fn, backend="eager")(torch.ones(8))
    idents[threading.current_thread().name] = threading.get_ident()

threads = [threading.Thread(target=work, args=(i,), name=f"worker-{i}") for i in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("THREADS", sorted(idents.items()), flush=True)

def own(x):
    return heavy(x) * 3

p = cProfile.Profile()
p.enable()
torch.compile(own, backend="eager")(torch.ones(8))
p.disable()
stats = pstats.Stats(p, stream=io.StringIO()).stats
print("OWN_PROFILE", len(stats) > 100, any(k[2] == "_compile" for k in stats), flush=True)

def under_profiler(x):
    return heavy(x) - 1

# with_stack=True is left out: torch 2.13's key_averages() raises UnicodeDecodeError with it,
# with or without dynaprof
with torch.profiler.profile() as tp:
    torch.compile(under_profiler, backend="eager")(torch.ones(8))
print("TORCH_PROFILER", len(tp.key_averages()) > 0, flush=True)
"""

ODD = """
import os, sys
import torch

x = torch.ones(4)

def looped(x):
    return x.sin() + 1

for i in range(10):
    if i:
        torch._dynamo.reset()
    torch.compile(looped, backend="eager")(x)

def broken_backend(gm, inputs):
    raise ValueError("backend refuses <this> graph")

def fails(x):
    return x.cos() * 2

try:
    torch.compile(fails, backend=broken_backend)(x)
except Exception as e:
    print("CAUGHT", type(e).__name__, flush=True)

def rec(x, n):
    if n == 0:
        return x
    return rec(x + 1, n - 1)

def deep(x):
    return rec(x, 60)

torch.compile(deep, backend="eager")(x)

def in_child(x):
    return x.tan()

pid = os.fork()
if pid == 0:
    torch.compile(in_child, backend="eager")(x)
    print("CHILD compiled", flush=True)
    sys.exit(0)  # a normal exit: the child's atexit handlers run
_, status = os.waitpid(pid, 0)
print("CHILD status", os.waitstatus_to_exitcode(status), flush=True)

def last(x):
    return x.exp()

torch.compile(last, backend="eager")(x)
print("EXITING", flush=True)
os._exit(3)
"""

FORK_CPROFILE = """
import os, sys, torch
x = torch.ones(4)
torch.compile(lambda x: x.sin(), backend="eager")(x)
pid = os.fork()
if pid == 0:
    torch.compile(lambda x: x.cos(), backend="eager")(x)
    sys.exit(0)
os.waitpid(pid, 0)
"""


def _run(tmp: Path, name: str, text: str, *opts: str) -> CliResult:
    (tmp / name).write_text(text)
    return profile(tmp, [name], *opts, timeout=240)


@pytest.fixture(scope="module")
def threads_run(tmp_path_factory: pytest.TempPathFactory) -> CliResult:
    r = _run(tmp_path_factory.mktemp("threads"), "threads_and_profilers.py", THREADS_AND_PROFILERS, "--cprofile")
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory: pytest.TempPathFactory) -> CliResult:
    r = _run(tmp_path_factory.mktemp("odd"), "odd.py", ODD)
    assert r.returncode == 3, r.stderr  # the script's os._exit status
    return r


def _frames(s: Session, name: str) -> list[CompiledFrame]:
    return [f for f in s.frames if f.name == name]


# -- threads --------------------------------------------------------------------------------------


def test_compiles_on_several_threads_record_each_thread(threads_run: CliResult) -> None:
    line = next(x for x in threads_run.stdout.splitlines() if x.startswith("THREADS "))
    idents = dict(re.findall(r"\('(worker-\d)', (\d+)\)", line))
    assert len(idents) == 3
    s = load_session(threads_run.run_dir)
    for i in range(3):
        (f,) = _frames(s, f"thread_fn_{i}")
        assert f.status == "ok"
        assert f.thread_name == f"worker-{i}"
        assert f.thread == int(idents[f"worker-{i}"])
        assert f.cprofile and (threads_run.run_dir / f.cprofile).exists()
    # Dynamo compiles one frame at a time (a global compile lock): the windows never overlap
    workers = sorted((f for f in s.frames if f.name.startswith("thread_fn_")), key=lambda f: f.start_s)
    for a, b in itertools.pairwise(workers):
        assert a.start_s + (a.metrics.get("window_s") or 0) <= b.start_s + 1e-3


def test_samples_on_threads_are_tagged_with_their_thread(threads_run: CliResult) -> None:
    s = load_session(threads_run.run_dir)
    assert s.samples is not None
    by_key = {f.key: f for f in s.frames}
    for st in s.samples.stacks:
        if st.frame is not None:
            assert st.thread == by_key[st.frame].thread, st
    for f in s.frames:
        if f.name.startswith("thread_fn_"):
            assert any(st.frame == f.key and st.samples > 0 for st in s.samples.stacks), f.key


# -- the script's own profilers -------------------------------------------------------------------


def test_scripts_own_cprofile_works_and_is_left_alone(threads_run: CliResult) -> None:
    assert "OWN_PROFILE True True" in threads_run.stdout
    s = load_session(threads_run.run_dir)
    (own,) = _frames(s, "own")
    assert own.status == "ok" and own.cprofile is None
    assert any("another profiler is active" in w and "left it alone" in w for w in s.capture.warnings)
    assert any(st.frame == own.key for st in s.samples.stacks)  # type: ignore[union-attr]


def test_torch_profiler_around_a_compile(threads_run: CliResult) -> None:
    assert "TORCH_PROFILER True" in threads_run.stdout
    s = load_session(threads_run.run_dir)
    (f,) = _frames(s, "under_profiler")
    assert f.status == "ok" and f.compile_time_s
    assert f.cprofile  # kineto does not use sys.setprofile: --cprofile still profiles this compile


# -- resets, failures, deep recursion, fork, os._exit -----------------------------------------------


def test_reset_loop_gives_one_key_per_generation(odd_run: CliResult) -> None:
    s = load_session(odd_run.run_dir)
    looped = _frames(s, "looped")
    assert [f.key for f in looped] == ["0/0"] + [f"0/0#{g}" for g in range(1, 10)]
    assert [f.generation for f in looped] == list(range(10))
    assert all(f.compile_id == "0/0" and f.status == "ok" for f in looped)
    assert len({f.key for f in s.frames}) == len(s.frames)


def test_failed_compile_is_recorded_with_type_and_reason(odd_run: CliResult) -> None:
    assert "CAUGHT BackendCompilerFailed" in odd_run.stdout
    s = load_session(odd_run.run_dir)
    (f,) = _frames(s, "fails")
    assert f.status == "failed"
    assert f.fail_type == "BackendCompilerFailed"
    assert f.fail_reason and "backend refuses <this> graph" in f.fail_reason
    assert "1 failed" in unwrap(odd_run.stderr)


def test_deep_recursion_in_traced_code(odd_run: CliResult) -> None:
    s = load_session(odd_run.run_dir)
    (f,) = _frames(s, "deep")
    assert f.status == "ok" and (f.inlined_calls or 0) >= 60
    assert s.samples is not None
    depth = max((len(st.traced) for st in s.samples.stacks if st.frame == f.key), default=0)
    assert depth >= 30, depth  # sampled stacks reach far down the recursion
    folded = gzip.decompress((odd_run.run_dir / "stacks-traced.folded.gz").read_bytes()).decode()
    assert max(line.count(";rec (") for line in folded.splitlines()) >= 29
    assert (odd_run.run_dir / "flame-traced.svg").exists() and (odd_run.run_dir / "report.html").exists()
    assert "could not render" not in odd_run.stderr


def test_forked_child_is_not_profiled(odd_run: CliResult) -> None:
    assert "CHILD compiled" in odd_run.stdout and "CHILD status 0" in odd_run.stdout
    s = load_session(odd_run.run_dir)
    assert _frames(s, "in_child") == []  # only the parent's compiles: forked children are not profiled
    assert s.run.pid is not None


def test_os_exit_after_compiling_keeps_the_frames(odd_run: CliResult) -> None:
    assert "EXITING" in odd_run.stdout
    s = load_session(odd_run.run_dir)
    (f,) = _frames(s, "last")
    assert f.status == "ok"
    assert len(s.frames) == 13
    assert s.run.exit_status == 3 and s.run.end_reason == "lost" and not s.run.complete
    assert any("without dynaprof's cleanup" in w for w in s.capture.warnings)
    json.loads((odd_run.run_dir / "trace.json").read_text())


def test_forked_child_writes_nothing_into_the_run_folder(tmp_path: Path) -> None:
    r = _run(tmp_path, "fork_cprofile.py", FORK_CPROFILE, "--cprofile")
    assert r.returncode == 0, r.stderr
    s = load_session(r.run_dir)
    assert [f.key for f in s.frames] == ["0/0"]
    on_disk = sorted(p.name for p in (r.run_dir / "cprofile").iterdir())
    assert "1_0.prof" not in on_disk  # the child's compile (id 1/0) is not the parent's


CRASH = """
import ctypes, os, signal, sys, torch
x = torch.ones(4)
torch.compile(lambda x: x.sin() + 1, backend="eager")(x)

def dying_backend(gm, inputs):  # dies in the middle of the second compile
    if sys.argv[1] == "segfault":
        ctypes.string_at(0)
    os.kill(os.getpid(), signal.SIGKILL)

print("compiled one", flush=True)
torch.compile(lambda x: x.cos() * 2, backend=dying_backend)(x)
"""


@pytest.mark.parametrize("how, status", [("segfault", 128 + 11), ("sigkill", 128 + 9)])
def test_crash_mid_compile_keeps_everything_journaled_before_it(tmp_path: Path, how: str, status: int) -> None:
    (tmp_path / "crash.py").write_text(CRASH)
    r = profile(tmp_path, ["crash.py", how], timeout=240)
    assert r.returncode == status, r.stderr
    assert "compiled one" in r.stdout
    s = load_session(r.run_dir)
    first, second = s.frames
    assert first.status == "ok" and first.compile_time_s
    assert second.status == "unfinished" and second.compile_time_s is None  # it never ended
    assert s.run.exit_status == status and s.run.end_reason == "signal" and not s.run.complete
    assert s.samples is not None
    # samples are flushed when a compile ends: the first compile's are kept, the dying one's lost
    assert {st.frame for st in s.samples.stacks} - {None} == {first.key}
