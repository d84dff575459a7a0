"""``dynaprof sweep``'s argument rules and ``check`` / ``compare`` / ``pr`` on hand-built sweep
folders, through the real CLI entry point (no torch: nothing is run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynaprof.cli import main
from dynaprof.cli.sweep import parse_param, substitute
from dynaprof.errors import DynaprofError
from dynaprof.model.sweep import check_params, point_dir, save_sweep
from tests.sweeps import restart_sweep


def test_params_and_substitution() -> None:
    p = parse_param("LAYERS=4, 8,16")
    assert (p.name, p.values) == ("LAYERS", ["4", "8", "16"])
    assert substitute(["--layers", "{LAYERS}", "{OTHER}", "x{LAYERS}y"], {"LAYERS": "8"}) == [
        "--layers", "8", "{OTHER}", "x8y"]
    assert point_dir({"LAYERS": "8", "MODE": "a/b c"}) == "LAYERS-8_MODE-a_b_c"
    for bad in ("LAYERS", "1X=2", "L=", "L=4,,8"):
        with pytest.raises(DynaprofError):
            parse_param(bad)
    for params, msg in [([parse_param("L=4,x")], "not a number"), ([parse_param("L=4,-8")], "positive"),
                        ([parse_param("L=4,4")], "two different sizes"),
                        ([parse_param("L=4,8"), parse_param("W=1")], "same number of values"), ([], "at least one")]:
        with pytest.raises(DynaprofError, match=msg):
            check_params(params)


def test_sweep_refuses_bad_input_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    assert main(["sweep", "--param", "L=4,8", "--project", "W=64", str(script)]) == 2
    assert main(["sweep", "--param", "L=4,8", "-o", str(tmp_path / "o"), str(tmp_path / "missing.py")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dynaprof: error: --project 'W=64': expected L=V (the first --param's name)",
                   f"dynaprof: error: can't open file {str(tmp_path / 'missing.py')!r}: no such file"]


def _sweep_dir(tmp_path: Path, name: str, restart_k: float, seed: int) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    save_sweep(restart_sweep(restart_k, seed), folder)
    return folder


def test_check_exits_1_when_an_interval_lies_above_the_bound(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _sweep_dir(tmp_path, "s", 2.0, 0)
    assert main(["check", str(sweep), "--max-growth", "1.3"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("growth over budget with LAYERS") and "  - restart waste grows as N^2.0" in out
    assert main(["check", str(sweep), "--max-growth", "2.5"]) == 0
    assert capsys.readouterr().out.startswith("ok: growth with LAYERS within budget")
    assert main(["check", str(sweep / "sweep.json"), "--max-growth", "restart waste=2.5",
                 "--max-growth", "guards=0.5"]) == 1
    out = capsys.readouterr().out
    assert "  - guards grows as N^1.00 (exact), above the bound 0.50" in out
    assert "  ok: restart waste grows as N^2." in out
    for args, msg in [(["--max-growth", "nope=1"], "no fitted measure named 'nope'"),
                      (["--max-growth", "1.3", "--max-guards", "5"], "--max-guards: budgets of a run"),
                      (["--max-growth", "x"], "expected an exponent")]:
        assert main(["check", str(sweep), *args]) == 2
        assert msg in capsys.readouterr().err
    assert main(["check", str(tmp_path), "--max-growth", "1"]) == 2  # not a sweep folder
    assert "is not a sweep folder" in capsys.readouterr().err


def test_compare_and_pr_of_two_sweeps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = _sweep_dir(tmp_path, "base", 1.0, 1), _sweep_dir(tmp_path, "new", 2.0, 2)
    out = tmp_path / "cmp"
    assert main(["compare", str(base), str(new), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "exponents changed outside the noise" in err and "restart waste: N^1.0" in err
    md = (out / "compare.md").read_text()
    assert "| restart waste |" in md and "steeper" in md
    assert (out / "growth-base.svg").exists() and (out / "growth-new.svg").exists()
    assert main(["pr", str(base), str(new)]) == 0
    comment = (new / "pr" / "comment.md").read_text()
    assert "![BASE base: compile time against LAYERS](growth-base.svg)" in comment and "steeper" in comment
    assert "gh pr comment N --body-file" in capsys.readouterr().err
    assert main(["compare", str(base), str(tmp_path / "nope"), "-o", str(tmp_path / "c2")]) == 2
