"""The pytest plugin, through pytester: the ``dynaprof_profile`` fixture's budgets and ``--dynaprof DIR``."""

from __future__ import annotations

import json
import re
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import dynaprof
from dynaprof.cli import main as cli_main
from dynaprof.pytest_plugin import run_folder_for

pytest_plugins = ["pytester"]

_TESTS = textwrap.dedent(
    """
    import torch

    def fwd(x):
        return torch.sin(x) * 2 + 1

    def test_within_budget(dynaprof_profile):
        torch.compile(fwd, backend="eager")(torch.randn(3))
        dynaprof_profile.assert_budget(max_compile_time=120, max_recompiles=0, max_graph_breaks=0)
        assert len(dynaprof_profile.session.frames) == 1

    def test_over_budget(dynaprof_profile):
        g = torch.compile(lambda x: x * 2, backend="eager")
        for shape in [(3,), (3, 3), (3, 3, 3)]:
            g(torch.randn(*shape))
        dynaprof_profile.assert_budget(max_recompiles=0, max_guards=1, max_compile_time=120)

    def test_compiles_without_the_fixture():
        torch.compile(lambda x: x - 1, backend="eager")(torch.randn(2))

    def test_compiles_nothing():
        assert torch.ones(2).sum().item() == 2
    """
)


def test_entry_point_is_registered() -> None:
    eps = [ep for ep in entry_points(group="pytest11") if ep.name == "dynaprof"]
    assert [ep.value for ep in eps] == ["dynaprof.pytest_plugin"]


@pytest.mark.torch
def test_fixture_budgets_and_one_folder_per_compiling_test(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_inner=_TESTS)
    monkeypatch.setenv("COLUMNS", "250")  # the inner pytest's summary lines, uncut
    out = pytester.path / "profiles"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:logging", "--timeout", "300",
                                           "--dynaprof", str(out))
    result.assert_outcomes(passed=3, failed=1)
    text = result.stdout.str()

    # a breach reads like `dynaprof check` on the same run, line for line
    over = out / run_folder_for(Path("."), "test_inner.py::test_over_budget").name
    assert (over / "report.html").is_file()
    capsys.readouterr()
    status = cli_main(["check", str(over), "--max-recompiles", "0", "--max-guards", "1", "--max-compile-time", "120"])
    check_lines = capsys.readouterr().out.splitlines()
    assert status == 1 and check_lines[0].startswith("over budget: 4 breaches")
    for line in check_lines:
        assert line in text.splitlines(), line
    assert "  - recompiles 2 > budget 0" in check_lines
    assert "Failed: over budget: 4 breaches" in text and "Traceback" not in text

    # --dynaprof: a folder for each test that compiled, none for the one that did not
    names = sorted(p.name for p in out.iterdir())
    assert names == ["test_inner.py--test_compiles_without_the_fixture", "test_inner.py--test_over_budget",
                     "test_inner.py--test_within_budget"]
    plain = dynaprof.load_session(out / names[0])
    assert plain.run.target == "test_inner.py::test_compiles_without_the_fixture"
    assert plain.run.command == [] and plain.run.exit_status is None and len(plain.frames) == 1

    # pytest-timeout holds SIGALRM: the thread sampler is used, and the terminal says so once
    assert text.count("dynaprof: SIGALRM is held during tests") == 1
    assert any("SIGALRM is held" in w for w in plain.capture.warnings)
    assert plain.samples is not None and plain.samples.count > 0


@pytest.mark.torch
def test_fixture_without_the_option_keeps_budgets_only(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_budget=textwrap.dedent(
            """
            import json, torch

            def test_budget(dynaprof_profile):
                torch.compile(lambda x: x + 1, backend="eager")(torch.randn(2))
                result = dynaprof_profile.check(max_compile_time=120)
                assert result.ok and result.checked
                run = dynaprof_profile.run_dir
                print("RUN", json.dumps(sorted(p.name for p in run.iterdir())))

            def test_bad_budget(dynaprof_profile):
                dynaprof_profile.assert_budget(max_guards=-1)
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "-p", "no:logging")
    result.assert_outcomes(passed=1, failed=1)
    [listed] = re.findall(r"RUN (\[.*?\])", result.stdout.str())
    assert json.loads(listed) == ["session.json"]  # nothing rendered unless --dynaprof asks
    assert "ProfileError: max_guards must be a whole number >= 0, got -1" in result.stdout.str()


def test_plugin_is_inert_until_used(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import json, sys

        def pytest_unconfigure(config):
            mods = sorted(m for m in sys.modules if m.startswith("dynaprof") or m == "torch")
            with open("modules.json", "w") as fh:
                json.dump(mods, fh)
        """
    )
    pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    loaded = json.loads((pytester.path / "modules.json").read_text())
    # the options' one declaration (standard library only) for its flags; no capture, api, torch
    assert loaded == ["dynaprof", "dynaprof.model", "dynaprof.model.capture_options", "dynaprof.pytest_plugin"]
    assert "dynaprof:" not in result.stdout.str()


def test_run_folder_names_are_safe() -> None:
    root = Path("/r")
    assert run_folder_for(root, "tests/test_a.py::test_b[x/y-1]").name == "tests-test_a.py--test_b-x-y-1"
    long = run_folder_for(root, "t.py::test_" + "x" * 300)
    assert len(long.name) <= 120 and long.parent == root
    assert run_folder_for(root, "t.py::test_" + "x" * 300 + "a") != long
