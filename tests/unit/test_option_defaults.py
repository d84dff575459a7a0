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
    assert (got["cprofile"], got["time_calls"], got["inline_profile"], got["aot_components"]) == (
        CAPTURE.cprofile_dir is not None, CAPTURE.time_calls, CAPTURE.inline_profile, CAPTURE.aot_components)
    assert got["replay"] == CAPTURE.replay_graphs == ScriptRun.replay  # --no-replay turns it off


def test_the_child_s_config_has_the_capture_defaults() -> None:
    child = ChildConfig(journal="j", kind="script", target="t", args=[])
    assert child.capture_options() == CAPTURE
    shared = {f.name for f in dataclasses.fields(CaptureOptions)} & {f.name for f in dataclasses.fields(ChildConfig)}
    assert shared == {f.name for f in dataclasses.fields(CaptureOptions)} - {"use_signal"}


@pytest.mark.parametrize("fn", [dynaprof.profile, Profile.__init__], ids=["profile", "Profile"])
def test_the_api_s_keywords(fn: Any) -> None:
    sig = {k: p.default for k, p in inspect.signature(fn).parameters.items()}
    # rate None: up to CAPTURE.rate_hz, adapted (CAPTURE.adapt_rate), as `dynaprof run` without --rate
    assert (sig["sampler"], sig["rate"], sig["cprofile"], sig["time_calls"]) == (
        CAPTURE.sampler, None, CAPTURE.cprofile_dir is not None, CAPTURE.time_calls)
    assert CAPTURE.adapt_rate
    assert (sig["max_rows"], sig["exports"]) == (RENDER.max_rows, RENDER.exports)


def test_the_notebook_s_flags() -> None:
    got = {a.dest: a.default for a in notebook._parser()._actions}
    assert (got["sampler"], got["rate"], got["cprofile"], got["time_calls"]) == (
        CAPTURE.sampler, None, CAPTURE.cprofile_dir is not None, CAPTURE.time_calls)
    assert (got["max_rows"], got["exports"]) == (RENDER.max_rows, RENDER.exports)


def test_the_pytest_options() -> None:
    added: dict[str, Any] = {}

    class Group:
        def addoption(self, *names: str, **kw: Any) -> None:
            added[names[0]] = kw.get("default")

    class Parser:
        def getgroup(self, *_: Any) -> Group:
            return Group()

    pytest_plugin.pytest_addoption(Parser())  # type: ignore[arg-type]
    assert added["--dynaprof-rate"] is None and CAPTURE.rate_hz == pytest_plugin.RATE_HZ


def test_pr_shows_fewer_rows_by_name_only() -> None:
    got = _defaults(PrCommand().prepare_parser)
    assert got["max_rows"] == PR_MAX_ROWS < RENDER.max_rows


def test_the_run_folder_options_differ_from_the_library_s_only_in_exports() -> None:
    """Renderers called as a library return text ("plain"); a run folder's exports are "auto"."""
    library = RenderOptions()
    diff = {f.name for f in dataclasses.fields(RenderOptions) if getattr(RENDER, f.name) != getattr(library, f.name)}
    assert diff == {"exports"} and RENDER.exports == "auto"
