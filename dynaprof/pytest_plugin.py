"""pytest plugin (entry point ``dynaprof``): compile-time budgets in tests, and per-test profiles.

* fixture ``dynaprof_profile``: profiles every ``torch.compile`` compile of the test from the
  moment it is requested; ``dynaprof_profile.assert_budget(max_compile_time=2, max_guards=5000)``
  stops it and fails the test, in ``dynaprof check``'s words, when a budget is exceeded.
* fixture ``dynaprof_sweep``: ``dynaprof_sweep(build, sizes=[4, 8, 16]).assert_growth(1.3)`` runs
  ``dynaprof.sweep`` into a temporary folder and fails the test when compile time grows faster.
* ``--dynaprof DIR``: one run folder per test that compiled, ``DIR/<test id>/`` (tests that
  compiled nothing leave none).

Inert until used: loading it adds two options and a fixture, nothing else is imported and no
hook runs per test unless ``--dynaprof`` is given or the fixture is requested. Where SIGALRM is
held (pytest-timeout's signal method, or the test's own alarm), compiles are sampled from a
thread, and the terminal summary says so once. See docs/python-api.md.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import signal
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from dynaprof.model.capture_options import PYTEST, CaptureOptions, switches

if TYPE_CHECKING:
    from dynaprof.analysis.budgets import CheckResult
    from dynaprof.api import Profile, SweepResult
    from dynaprof.model.session import Session

FIXTURE = "dynaprof_profile"
_STASH_SIGALRM = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dynaprof", "dynaprof: torch.compile compile-time profiles")
    group.addoption(
        "--dynaprof", metavar="DIR", default=None,
        help="write a dynaprof run folder for each test that compiled, under DIR/<test id>/",
    )
    group.addoption(
        "--dynaprof-rate", metavar="HZ", type=float, default=None,
        help=f"dynaprof: samples per second of compile time (default: up to {CaptureOptions.rate_hz:g}, lower "
             "where a sample costs a compile more than the sampler's budget)",
    )
    for s in switches(PYTEST):  # the capture's switches, declared once (model.capture_options)
        group.addoption(s.pytest_flag, dest=f"dynaprof_{s.name}", action=s.store,
                        default=s.default, help=f"dynaprof: {s.help}")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STASH_SIGALRM] = []
    out = config.getoption("dynaprof", None)
    if out:
        config.pluginmanager.register(_PerTest(Path(out)), "dynaprof-per-test")


def sigalrm_taken() -> bool:
    """Whether SIGALRM has a handler or a running timer that is not ours (pytest-timeout's
    ``signal`` method sets both around each test)."""
    if not hasattr(signal, "SIGALRM"):
        return True
    handler = signal.getsignal(signal.SIGALRM)
    return handler not in (signal.SIG_DFL, None) or signal.getitimer(signal.ITIMER_REAL)[0] > 0


def run_folder_for(root: Path, nodeid: str) -> Path:
    """``DIR/<test id>``: the node id made a safe folder name (long ids shortened with a hash)."""
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "-", nodeid.replace("::", "--")).strip("-.") or "test"
    if len(name) > 120:
        name = f"{name[:100]}-{hashlib.sha1(nodeid.encode()).hexdigest()[:12]}"
    return root / name


def _profile(config: pytest.Config, nodeid: str, run_dir: Path, render: bool) -> Profile:
    from dynaprof.api import Profile, clear_previous_run

    taken = sigalrm_taken()
    if taken:
        notes = config.stash.setdefault(_STASH_SIGALRM, [])
        if not notes:
            notes.append(nodeid)

    class _TestProfile(Profile):
        def _use_signal(self) -> bool:
            return not taken

        def _notes(self) -> list[str]:
            if not taken:
                return []
            return ["SIGALRM is held (pytest-timeout's signal method or the test's own alarm): compiles were "
                    "sampled from a thread (lower rate)"]

    force = run_dir.is_dir() and clear_previous_run(run_dir)  # a re-run replaces that test's earlier run
    chosen: dict[str, Any] = {s.name: bool(config.getoption(f"dynaprof_{s.name}", s.default))
                              for s in switches(PYTEST)}
    return _TestProfile(run_dir, force=force, rate=config.getoption("dynaprof_rate"), label=nodeid, render=render,
                        **chosen)


def _drop_if_nothing_compiled(prof: Profile) -> None:
    run_dir = prof.run_dir
    if run_dir is not None and prof._session is not None and not prof._session.frames:
        shutil.rmtree(run_dir, ignore_errors=True)


class _PerTest:
    """``--dynaprof DIR``: each test's call phase profiled (unless it uses the fixture, which then
    writes the same folder)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        if FIXTURE in getattr(item, "fixturenames", ()):
            return (yield)
        from dynaprof.api import ProfileError

        try:
            prof = _profile(item.config, item.nodeid, run_folder_for(self.root, item.nodeid), render=True)
            prof.start()
        except ProfileError as e:  # e.g. the test suite itself runs under dynaprof: profile nothing
            item.warn(pytest.PytestWarning(f"dynaprof: {e.message}"))
            return (yield)
        try:
            result = yield
        except BaseException as e:
            _stop(item, prof, "interrupted" if isinstance(e, KeyboardInterrupt) else "exception")
            raise
        _stop(item, prof, "exited")
        return result


def _stop(item: pytest.Item, prof: Profile, reason: str) -> None:
    try:
        prof._finish(reason)
        _drop_if_nothing_compiled(prof)
    except Exception as e:  # never change the test's outcome over the profile
        item.warn(pytest.PytestWarning(f"dynaprof: could not save the profile: {type(e).__name__}: {e}"))


class CompileProfile:
    """What the ``dynaprof_profile`` fixture gives a test."""

    def __init__(self, prof: Profile) -> None:
        self._prof = prof

    @property
    def running(self) -> bool:
        return self._prof.running

    @property
    def run_dir(self) -> Path | None:
        return self._prof.run_dir

    def stop(self) -> Session:
        """Stop profiling (the fixture stops at teardown otherwise) and return the session."""
        if self._prof.running:
            return self._prof.stop()
        return self._prof.session

    @property
    def session(self) -> Session:
        """The session so far: stops the profile first."""
        return self.stop()

    def summary(self) -> str:
        self.stop()
        return self._prof.summary()

    def check(
        self,
        *,
        max_compile_time: float | None = None,
        max_restarts: int | None = None,
        max_guards: int | None = None,
        max_graph_breaks: int | None = None,
        max_recompiles: int | None = None,
        max_eager_fallbacks: int | None = None,
    ) -> CheckResult:
        """The budgets ``dynaprof check`` applies, on this test's compiles (stops the profile)."""
        from dynaprof.analysis.budgets import Budget, check
        from dynaprof.api import ProfileError

        limits = {"max_compile_time": max_compile_time, "max_restarts": max_restarts, "max_guards": max_guards,
                  "max_graph_breaks": max_graph_breaks, "max_recompiles": max_recompiles,
                  "max_eager_fallbacks": max_eager_fallbacks}
        for name, v in limits.items():
            if v is None:
                continue
            whole = name != "max_compile_time"
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf") or (
                whole and v != int(v)
            ):
                what = "a whole number" if whole else "a number"
                raise ProfileError(f"{name} must be {what} >= 0, got {v!r}")
        budget = Budget(
            max_compile_time_s=None if max_compile_time is None else float(max_compile_time),
            max_restarts=_int(max_restarts), max_guards=_int(max_guards),
            max_graph_breaks=_int(max_graph_breaks), max_recompiles=_int(max_recompiles),
            max_eager_fallbacks=_int(max_eager_fallbacks),
        )
        if budget.is_empty():
            raise ProfileError("no budget given; pass at least one of max_compile_time, max_restarts, "
                               "max_guards, max_graph_breaks, max_recompiles, max_eager_fallbacks")
        return check(self.session, budget)

    def assert_budget(self, **limits: Any) -> None:
        """Fail the test when a budget is exceeded, listing each breach as ``dynaprof check`` does."""
        from dynaprof.analysis.budgets import summary

        result = self.check(**limits)
        if result.ok:
            return
        lines = [summary(self.session, result)]
        lines += [f"  - {b.message}" for b in result.breaches]
        lines += [f"  ok: {line}" for line in result.checked]
        if self.run_dir is not None and self._prof.render:
            lines.append(f"  profile: {self.run_dir}/report.html")
        pytest.fail("\n".join(lines), pytrace=False)


def _int(v: float | None) -> int | None:
    return None if v is None else int(v)


@pytest.fixture
def dynaprof_profile(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
    CompileProfile
]:
    """Profile this test's ``torch.compile`` compiles; assert budgets with ``.assert_budget(...)``."""
    config = request.config
    out = config.getoption("dynaprof", None)
    if out:
        run_dir, render = run_folder_for(Path(out), request.node.nodeid), True
    else:  # budgets only: session.json in a temporary folder, no rendering
        run_dir, render = tmp_path_factory.mktemp("dynaprof", numbered=True) / "run", False
    prof = _profile(config, request.node.nodeid, run_dir, render)
    prof.start()
    try:
        yield CompileProfile(prof)
    finally:
        if prof.running:
            prof.stop()
        if out:
            _drop_if_nothing_compiled(prof)


@pytest.fixture
def dynaprof_sweep(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., SweepResult]:
    """``dynaprof.sweep`` into a temporary folder: ``dynaprof_sweep(fn, sizes, repeat=3)``; assert
    a growth bound on what it returns with ``.assert_growth(1.3)`` (or ``guards=1.0``...)."""
    from dynaprof.api import sweep

    def run(fn: Callable[[float], object], sizes: Sequence[float], **kw: Any) -> SweepResult:
        return sweep(fn, sizes, path=tmp_path_factory.mktemp("dynaprof-sweep", numbered=True) / "sweep", **kw)

    return run


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    noted = config.stash.get(_STASH_SIGALRM, [])
    if noted:
        terminalreporter.write_line(
            "dynaprof: SIGALRM is held during tests (pytest-timeout's signal method, or a test's alarm): "
            "compiles were sampled from a thread, at a lower rate"
        )
