"""A real recompile: the session lists every cache entry's failures (moved from tests/unit/test_facts.py,
which builds the same facts by hand without running torch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLES, profile
from tests.helpers import torch_release, unwrap


@pytest.mark.torch
def test_live_recompile_lists_every_entry(tmp_path: Path) -> None:
    r = profile(tmp_path, [str(SAMPLES / "graph_breaks_recompiles.py")])
    assert r.returncode == 0, r.stderr
    from dynaprof.model import load_session

    s = load_session(r.run_dir)
    step = [f for f in s.frames if f.name == "step"]
    assert len(step) == 3
    last = step[-1].recompile_reason or ""
    if torch_release() >= (2, 5):
        assert "0/0" in last and "0/1" in last, last  # both cache entries' failures, as torch's log lists
    else:  # torch 2.4 lists each entry's first failing guard, one a line, without the entry's compile id
        assert len(last.splitlines()) == 2 and "mismatch" in last, last
    assert all(c.filename != "<string>" for f in s.frames for c in f.call_site)
    assert "graph break at graph_breaks_recompiles.py:16" in unwrap(r.stderr)
