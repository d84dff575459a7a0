"""``dynaprof sweep`` for real: each point a fresh ``dynaprof run``, a failed point recorded while
the sweep goes on, Ctrl-C keeping what finished, and the exact counts' exponents of compile work of
known shape (N sequential ops: 1; a prefix retraced at each of N steps: about 2; nothing: 0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynaprof.analysis.growth import growth
from dynaprof.model.store import load_session
from dynaprof.model.sweep import load_sweep
from tests.conftest import SAMPLES, run_dynaprof
from tests.helpers import ctrl_c_once

GROWTH = str(SAMPLES / "compile_growth.py")


def test_a_failed_point_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text("import os, sys\nn = int(os.environ['N'])\nprint('arg', sys.argv[1])\n"
                      "if n == 3:\n    raise SystemExit('no good at ' + sys.argv[1])\n")
    out = tmp_path / "sweep"
    r = run_dynaprof(["sweep", "--param", "N=2,3,4", "--repeat", "1", "-o", str(out), str(script), "n{N}"],
                     cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    sweep = load_sweep(out)
    assert [p.values for p in sweep.points] == [{"N": "2"}, {"N": "3"}, {"N": "4"}]
    failed = sweep.points[1].runs[0]
    assert failed.exit_status == 1 and failed.error == "exit status 1: no good at n3" and not failed.ok
    assert sweep.points[2].runs[0].ok  # the sweep went on after it
    assert "arg n4" in (out / "N-4" / "1.log").read_text()  # {N} replaced in the arguments
    assert (out / "N-4" / "1" / "session.json").exists() and (out / "summary.md").exists()
    assert "exit status 1: no good at n3" in (out / "summary.md").read_text()


def test_ctrl_c_keeps_the_points_that_finished(tmp_path: Path) -> None:
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(1.0)\n")
    out = tmp_path / "sweep"
    err = ctrl_c_once(["sweep", "--param", "N=1,2,3,4,5", "--repeat", "1", "-o", str(out), str(script)], tmp_path,
                      out / "N-2" / "1.log")
    sweep = load_sweep(out)
    assert sweep.interrupted and 1 <= len(sweep.points) < 5
    assert sweep.points[0].runs[0].ok and (out / "summary.md").exists() and (out / "report.html").exists()
    assert "interrupted; the points that finished are kept" in err


@pytest.mark.torch
def test_a_real_sweep_writes_every_point_and_fits_the_counts(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    r = run_dynaprof(["sweep", "--param", "N=4,8", "--repeat", "1", "--project", "N=64", "-o", str(out), GROWTH,
                      "--shape", "linear", "--n", "{N}"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    sweep = load_sweep(out)
    assert sweep.torch_version and [p.x for p in sweep.points] == [4.0, 8.0]
    for p in sweep.points:  # each point is a whole run folder, read back as dynaprof run wrote it
        session = load_session(out / p.runs[0].run_dir)
        assert session.run.env is not None and session.frames
        assert p.runs[0].measures["total"] > 0 and p.runs[0].counts["inlined_calls"] == p.x
    g = growth(sweep)
    inlined = g.fit("inlined_calls")
    assert inlined is not None and inlined.exponent == pytest.approx(1.0)  # N calls of step() inlined
    assert {f.measure for f in sweep.fits} >= {"total", "inlined_calls", "fx_nodes"}
    # the files the growth rolls causes up along: the script's own lines, from the largest point
    assert any(path.endswith("compile_growth.py") for path in sweep.cause_files.values()), sweep.cause_files
    assert "compile time grows as N^" in r.stderr and "projected at N=64" in r.stderr
    assert "is 8x the largest point measured" in r.stderr
    assert (out / "growth.svg").read_text().startswith("<svg")


#: the exact counts' exponents each shape must give over N = 4, 8, 16: (low, high)
SHAPES = {
    "constant": {"fx_nodes": (-0.01, 0.01), "inlined_calls": (-0.01, 0.01), "guards": (-0.01, 0.01)},
    "linear": {"inlined_calls": (0.99, 1.01), "fx_nodes": (0.85, 1.01)},
    "quadratic": {"inlined_calls": (1.8, 2.05), "fx_nodes": (1.7, 2.05)},  # N(N+1)/2 steps traced
}


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_known_shapes_give_their_exponents(tmp_path: Path, shape: str) -> None:
    out = tmp_path / shape
    r = run_dynaprof(["sweep", "-q", "--param", "N=4,8,16", "--repeat", "1", "-o", str(out), GROWTH,
                      "--shape", shape, "--n", "{N}"], cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    g = growth(load_sweep(out))
    for count, (low, high) in SHAPES[shape].items():
        fit = g.fit(count)
        assert fit is not None and fit.exponent is not None and low <= fit.exponent <= high, fit
