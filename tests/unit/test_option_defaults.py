"""One set of options: every entry point's defaults are the capture's (``CaptureOptions``) and a
run folder's rendering options (``RUN_FOLDER_OPTIONS``), except the named, documented exceptions
(``dynaprof pr``'s rows, ``PR_MAX_ROWS``). A default changed in one entry point alone fails here."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from typing import Any

import pytest

import dynaprof
from dynaprof import notebook, pytest_plugin
from dynaprof.api import Profile
from dynaprof.capture.child import ChildConfig
from dynaprof.capture.core import PYSPY_RATE_HZ, CaptureOptions, default_rate
from dynaprof.cli.pr import PR_MAX_ROWS, PrCommand
from dynaprof.cli.report import ReportCommand
from dynaprof.cli.run import RunCommand
from dynaprof.model.capture_options import API, NOTEBOOK, PYTEST, RUN, switched, switches
from dynaprof.pipeline import ScriptRun
from dynaprof.render.base import RUN_FOLDER_OPTIONS, RenderOptions

CAPTURE = CaptureOptions()
RENDER = RUN_FOLDER_OPTIONS
#: command-line dest -> the RenderOptions field it sets
RENDER_ARGS = {"min_width": "min_width", "icicle": "icicle", "node_threshold": "node_threshold",
               "edge_threshold": "edge_threshold", "collapse_torch": "collapse_torch",
               "graph_nodes": "max_graph_nodes", "max_rows": "max_rows", "exports": "exports"}  # fmt: skip


def _defaults(prepare: Any) -> dict[str, Any]:
    p = argparse.ArgumentParser()
    prepare(p)
    return {a.dest: a.default for a in p._actions}


def test_run_and_report_render_as_a_run_folder_does() -> None:
    for command in (RunCommand(), ReportCommand()):
        got = _defaults(command.prepare_parser)
        for dest, name in RENDER_ARGS.items():
            assert got[dest] == getattr(RENDER, name), (command.name, dest)


def test_run_captures_with_the_capture_defaults() -> None:
    got = _defaults(RunCommand().prepare_parser)
    assert got["sampler"] == CAPTURE.sampler
    assert got["rate"] is None and default_rate(got["sampler"]) == CAPTURE.rate_hz  # sampler-dependent
    assert default_rate("py-spy") == PYSPY_RATE_HZ != CAPTURE.rate_hz  # named: py-spy reads from outside
    assert got["cprofile"] == (CAPTURE.cprofile_dir is not None)


def test_every_switch_is_declared_once_with_its_default() -> None:
    """A switch is a field of CaptureOptions with its flag, help and entry points; nothing here
    lists them again (a new switch is its declaration, its use and its test)."""
    names = [s.name for s in switches()]
    assert len(names) == len(set(names)) >= 5 and "use_signal" in names  # --thread-sampler, added this way
    flags = [s.flag for s in switches()]
    assert len(flags) == len(set(flags))
    for s in switches():
        assert s.default == getattr(CAPTURE, s.name) and s.flag.startswith("--") and s.help
        assert s.entries and s.entries <= {RUN, API, NOTEBOOK, PYTEST} and RUN in s.entries


def test_every_entry_point_offers_its_switches_from_the_declaration() -> None:
    """The run command, the notebook magic and the pytest plugin make their flags from the one
    declaration, with its default; ``profile()`` takes each by name."""
    parsers = {RUN: RunCommand().prepare_parser, NOTEBOOK: lambda p: p._actions.extend(notebook._parser()._actions)}
    for entry, prepare in parsers.items():
        p = argparse.ArgumentParser()
        prepare(p)
        by_flag = {o: a for a in p._actions for o in a.option_strings}
        for s in switches(entry):
            action = by_flag[s.flag]
            assert (action.dest, action.default, action.help) == (s.name, s.default, s.help), (entry, s.name)
            flipped = vars(p.parse_known_args([s.flag])[0])[s.name] if entry == RUN else None
            assert flipped in (None, not s.default), (entry, s.name)
        assert not [s.flag for s in switches() if entry not in s.entries and s.flag in by_flag], entry
    added = _pytest_options()
    for s in switches(PYTEST):
        assert added[s.pytest_flag] == {"dest": f"dynaprof_{s.name}", "default": s.default}
    assert not [s for s in switches() if PYTEST not in s.entries and s.pytest_flag in added]
    for s in switches(API):
        prof = dynaprof.profile(**{s.name: not s.default})
        assert prof.switches == {s.name: not s.default}


def test_profile_refuses_a_switch_it_does_not_offer_by_name() -> None:
    with pytest.raises(dynaprof.ProfileError, match="replay_graphs: a `dynaprof run` option"):
        dynaprof.profile(replay_graphs=False)
    with pytest.raises(dynaprof.ProfileError, match="unexpected keyword 'time_call'"):
        dynaprof.profile(time_call=True)
    with pytest.raises(dynaprof.ProfileError, match="must be True or False"):
        dynaprof.profile(time_calls="yes")  # type: ignore[arg-type]


def test_the_child_s_config_carries_the_capture_options_whole() -> None:
    child = ChildConfig(journal="j", kind="script", target="t", args=[])
    assert child.capture == CAPTURE and ScriptRun("script", "t", [], [], "builtin", 1.0).capture == CAPTURE
    sent = ChildConfig("j", "script", "t", [], capture=switched({"time_calls": True, "use_signal": False}))
    assert ChildConfig.from_json(sent.to_json()) == sent  # serialized once, as it is


@pytest.mark.parametrize("fn", [dynaprof.profile, Profile.__init__], ids=["profile", "Profile"])
def test_the_api_s_keywords(fn: Any) -> None:
    sig = {k: p.default for k, p in inspect.signature(fn).parameters.items()}
    # rate None: up to CAPTURE.rate_hz, adapted (CAPTURE.adapt_rate), as `dynaprof run` without --rate
    assert (sig["sampler"], sig["rate"], sig["cprofile"]) == (CAPTURE.sampler, None, CAPTURE.cprofile_dir is not None)
    assert CAPTURE.adapt_rate
    assert (sig["max_rows"], sig["exports"]) == (RENDER.max_rows, RENDER.exports)


def test_the_notebook_s_flags() -> None:
    got = {a.dest: a.default for a in notebook._parser()._actions}
    assert (got["sampler"], got["rate"], got["cprofile"]) == (CAPTURE.sampler, None, CAPTURE.cprofile_dir is not None)
    assert (got["max_rows"], got["exports"]) == (RENDER.max_rows, RENDER.exports)


def _pytest_options() -> dict[str, dict[str, Any]]:
    added: dict[str, dict[str, Any]] = {}

    class Group:
        def addoption(self, *names: str, **kw: Any) -> None:
            added[names[0]] = {k: v for k, v in kw.items() if k in ("dest", "default")}

    class Parser:
        def getgroup(self, *_: Any) -> Group:
            return Group()

    pytest_plugin.pytest_addoption(Parser())  # type: ignore[arg-type]
    return added


def test_the_pytest_options() -> None:
    assert _pytest_options()["--dynaprof-rate"]["default"] is None  # up to CAPTURE.rate_hz, adapted


def test_pr_shows_fewer_rows_by_name_only() -> None:
    got = _defaults(PrCommand().prepare_parser)
    assert got["max_rows"] == PR_MAX_ROWS < RENDER.max_rows


def test_the_run_folder_options_differ_from_the_library_s_only_in_exports() -> None:
    """Renderers called as a library return text ("plain"); a run folder's exports are "auto"."""
    library = RenderOptions()
    diff = {f.name for f in dataclasses.fields(RenderOptions) if getattr(RENDER, f.name) != getattr(library, f.name)}
    assert diff == {"exports"} and RENDER.exports == "auto"
