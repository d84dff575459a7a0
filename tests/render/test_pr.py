"""``dynaprof pr``: comment.md under GitHub's limit, linking only to pictures in pr/ that exist;
static pictures (880 px, no script, no controls, XML), colours = phases; the gh line; bad input."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dynaprof.cli import main
from dynaprof.model.session import PHASES
from dynaprof.model.store import save_session
from dynaprof.render.colours import phase_colour
from dynaprof.render.pr_pictures import COMMENT_LIMIT, PICTURE_WIDTH
from tests.factories import inductor_session, seed_session

#: Markdown links and images (not backslash-escaped brackets) and live HTML tags' href / src
_LINK = re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]\(([^)\s]+)\)")
_HREF = re.compile(r"""<[a-z][^>]*\b(?:href|src)\s*=\s*["']?([^"'\s>]+)""", re.I)
SVG = "{http://www.w3.org/2000/svg}"


def _run_dir(tmp: Path, name: str, parametrized: bool = True) -> Path:
    d = tmp / name
    d.mkdir()
    save_session(seed_session(parametrized=parametrized), d)
    return d


def _check_pr(pr: Path) -> str:
    comment = (pr / "comment.md").read_text(encoding="utf-8")
    assert len(comment) < COMMENT_LIMIT
    targets = _LINK.findall(comment) + _HREF.findall(comment)
    assert targets, "the comment shows its pictures"
    for t in targets:  # only files inside pr/, by relative path, that exist
        assert "/" not in t and ":" not in t and not t.startswith(".."), t
        assert (pr / t).is_file(), t
    svgs = sorted(pr.glob("*.svg"))
    assert {t for t in targets} == {p.name for p in svgs}
    for p in svgs:
        text = p.read_text(encoding="utf-8")
        root = ET.fromstring(text)  # well-formed
        assert root.get("width") == str(PICTURE_WIDTH)
        assert not list(root.iter(f"{SVG}script"))
        assert "<script" not in text.lower()
        assert not any(k.endswith("href") or k.startswith("on") for el in root.iter() for k in el.attrib)
        assert "Reset zoom" not in text and ">Search<" not in text  # no dead controls
    return comment


def test_pr_for_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path, "run")
    assert main(["pr", str(run), "--number", "123"]) == 0
    comment = _check_pr(run / "pr")
    assert "![" in comment and "(user-code.svg)" in comment and "(phases.svg)" in comment
    assert "report.html" not in _LINK.findall(comment)
    err = capsys.readouterr().err
    gh = [line for line in err.splitlines() if "gh pr comment" in line]
    assert len(gh) == 1 and "gh pr comment 123 --body-file" in gh[0]
    assert gh[0].count("--attach") == 2 and "user-code.svg" in gh[0] and "phases.svg" in gh[0]
    assert "by hand" in err and "Enterprise Server" in err


def test_pictures_colour_phases(tmp_path: Path) -> None:
    d = tmp_path / "ind"
    d.mkdir()
    s = inductor_session()
    save_session(s, d)
    assert main(["pr", str(d)]) == 0
    phases = ET.parse(d / "pr" / "phases.svg").getroot()
    fills = {r.get("fill") for r in phases.iter(f"{SVG}rect")} - {"#fcfcfc"}
    allowed = {phase_colour(p) for p in PHASES}
    assert fills and fills <= allowed  # every colour is a phase's
    titles = [t.text or "" for t in phases.iter(f"{SVG}title")]
    assert titles and all("causes:" in t or "of compile" in t for t in titles)


def test_pr_before_after(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _run_dir(tmp_path, "base", parametrized=False)
    new = _run_dir(tmp_path, "new", parametrized=True)
    assert main(["pr", str(base), str(new)]) == 0
    comment = _check_pr(new / "pr")
    assert "dynaprof compare" in comment and "base" in comment and "new" in comment
    names = {p.name for p in (new / "pr").glob("*.svg")}
    assert names == {"phases.svg", "base-user-code.svg", "new-user-code.svg"}
    bars = ET.parse(new / "pr" / "phases.svg").getroot()
    labels = [t.text for t in bars.iter(f"{SVG}text")]
    assert any(lb and lb.startswith("BASE") for lb in labels) and any(lb and lb.startswith("NEW") for lb in labels)
    assert "gh pr comment N --body-file" in capsys.readouterr().err


def test_user_text_is_escaped_in_comment_and_pictures(tmp_path: Path) -> None:
    s = seed_session()
    evil = '<img src=x onerror="alert(1)">](javascript:x)'
    for f in s.functions:
        if f.kind == "traced" and f.name == "Module.forward":
            f.name = evil
    s.run.target = evil
    d = tmp_path / "evil"
    d.mkdir()
    save_session(s, d)
    assert main(["pr", str(d)]) == 0
    comment = _check_pr(d / "pr")
    assert "<img" not in comment
    for p in (d / "pr").glob("*.svg"):
        assert "<img" not in p.read_text(encoding="utf-8")


@pytest.mark.parametrize("argv", [["pr", "nope"], ["pr", "a", "b", "c"], ["pr", ".", "--number", "x;rm"]])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    if "." in argv:
        _run_dir(tmp_path, "r")
        argv = ["pr", "r", *argv[2:]]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dynaprof: error:")
