"""Capture hooks against real torch, in a fresh interpreter: the traced stack and the attempt index
come from the hooks around Dynamo's translator loop, never from frame locals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT, SAMPLES

pytestmark = pytest.mark.torch

_SCRIPT = textwrap.dedent(
    """
    import json, sys, threading
    sys.path.insert(0, {samples!r})
    import torch
    from dynaprof.capture.stacks import FunctionTable
    from dynaprof.capture.torch_hooks import Recorder

    records = []
    rec = Recorder(records.append, 0, FunctionTable())
    rec.install(inline_profile=False)
    at_attempt_start = []
    depths = []
    on_chromium = rec._on_chromium

    def spy(event):
        name = str(event.get("name"))
        win = rec.current(threading.get_ident())
        if event.get("ph") == "B" and name.startswith("compile_attempt_") and win is not None:
            at_attempt_start.append([int(name[16:]), win.root_runs])
        if win is not None:
            depths.append(rec.traced.depth(threading.get_ident()))
        return on_chromium(event)

    rec._on_chromium = spy
    import restart_analysis
    fn = torch.compile(restart_analysis.forward, backend="eager")
    fn(torch.randn(8, 8), 5)
    ends = [[r["key"], r["attempt"]] for r in records if r.get("t") == "compile_end"]
    print(json.dumps({{"hooks": rec.hooks, "starts": at_attempt_start, "ends": ends,
                       "left": rec.traced.depth(threading.get_ident()), "max_depth": max(depths)}}))
    """
)


def test_attempts_counted_from_root_translator_runs_agree_with_torch() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(samples=str(SAMPLES))],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "traced_stack" in got["hooks"]
    # at torch's "compile_attempt_N" begin, N root translators have run in that compile
    assert got["starts"] and all(n == runs for n, runs in got["starts"])
    assert any(n == 1 for n, _ in got["starts"]), "the sample restarts once"
    assert [a for _, a in got["ends"]] == [1, 1, 0, 0]  # 0/0 and 1/0 restart once, the resumes do not
    assert got["left"] == 0 and got["max_depth"] >= 1  # pushed while tracing, empty afterwards
