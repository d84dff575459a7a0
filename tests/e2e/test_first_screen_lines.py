"""The demo's first screen at 80 columns: from "dynaprof:" to "wrote", at most 30 lines (issue: the
first screen at 80 columns)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_dynaprof
from tests.helpers import requires_torch


@pytest.mark.torch
@requires_torch("2.5", "the 30-line budget is for a torch that hides nothing: on 2.4 four notes name the facts "
                "it hides and the parametrization's rows name its inlined calls and deep copies (~45 lines)")
def test_the_demo_s_first_screen_is_at_most_30_lines_at_80_columns(tmp_path: Path) -> None:
    # as scripts/demo.sh runs it: from the checkout, the sample named as typed
    proc = run_dynaprof(["run", "-o", str(tmp_path / "demo"), "samples/parametrized_linear.py", "--parametrize"],
                        cwd=ROOT, env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("dynaprof: profiling"))
    end = next(i for i, line in enumerate(lines) if line.startswith("dynaprof: wrote"))
    screen = lines[start : end + 1]
    assert len(screen) <= 30, "\n".join(screen)
    # the first and last lines name the run folder, whose path is the machine's
    assert all(len(line) <= 80 for line in screen[1:-1]), "\n".join(screen)
    assert any(line.lstrip().startswith("hottest: parametrization") for line in screen)
