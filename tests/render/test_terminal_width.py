"""The terminal summary fits the terminal (COLUMNS honoured, also when stderr is not a TTY), rows
under 1% are folded, nouns agree with their numbers, and the 'wrote' line is short."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynaprof.model.session import PropertyTrace
from dynaprof.render.terminal import summary_text
from tests.factories import frame, inductor_session, make_session, seed_session


def _long_session():  # type: ignore[no-untyped-def]
    s = seed_session()
    name = "a_really_long_function_name_that_goes_on_" * 4
    s.frames += [frame(f"{i}/0", name=name, filename="/very/long/path/" * 6 + "model.py", compile_time_s=0.01 * i,
                       start_s=10.0 + i, restart_reasons=["x " * 80]) for i in range(1, 6)]
    s.capture.warnings.append("a long note " * 30)
    return s


def _over(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width and "/" not in line.split()[-1]]


@pytest.mark.parametrize("make", [seed_session, inductor_session, _long_session])
@pytest.mark.parametrize("width", [80, 100, 120])
def test_every_line_fits(make, width: int) -> None:  # type: ignore[no-untyped-def]
    text = summary_text(make(), 25, width)
    assert _over(text, 100 if width == 80 else width) == [], text  # at COLUMNS=80: at most 100, paths aside


def test_prose_wraps_at_the_width() -> None:
    text = summary_text(_long_session(), 25, 80)
    prose = [line for line in text.splitlines() if line.lstrip().startswith(("hottest:", "note:", "also:", "total:"))]
    assert prose and all(len(line) <= 80 for line in prose)
    assert any(line.startswith("      ") for line in text.splitlines())  # hanging indent of a wrapped line


def test_singular_and_plural() -> None:
    s = make_session([frame("0/0", restarts=1, graph_breaks=1, guard_count=1)])
    s.frames[0].properties = [PropertyTrace("Linear.weight", "ParametrizedLinear", "weight", "p.py", 1, True, 1, 1,
                                            0.1)]
    text = summary_text(s, 25)
    assert "1 compiled frame," in text and "1 restart," in text and "1 graph break," in text and "1 guard" in text
    assert "parametrized property (1," in text and "1 parametrized properties" not in text
    assert "1 parametrized property (" in text


def test_columns_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    from dynaprof.cli.common import summary_width

    monkeypatch.setenv("COLUMNS", "80")
    assert summary_width() == 80
    monkeypatch.setenv("COLUMNS", "400")
    assert summary_width() == 120
    monkeypatch.delenv("COLUMNS")
    assert summary_width() in (100, *range(1, 121))  # not a TTY under pytest: 100


def test_wrote_line_is_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dynaprof.cli.outputs import print_written

    names = ["session.json", "report.html", "summary.md", "summary.txt", "trace.json", "flame-compiler.svg",
             "flame-traced.svg", "callgraph.svg", "callgraph.dot", "speedscope.json.gz", "flames/a.svg"]
    written = [tmp_path / n for n in names]
    print_written(tmp_path, written, [])
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith("session.json, report.html, summary.md and 8 more")
    assert len(lines) == 3  # a long tmp path: "open ..." and "re-render ..." on lines of their own
    assert lines[1].endswith("report.html in a browser") and lines[2].startswith("  re-render with: ")


def test_the_closing_lines_put_one_path_on_a_line_when_both_do_not_fit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from dynaprof.cli.outputs import print_written

    out = tmp_path / ("a-rather-long-run-folder-name-" * 2)
    out.mkdir()
    written = [out / "session.json", out / "report.html"]
    monkeypatch.setenv("COLUMNS", "80")
    print_written(out, written, [])
    lines = capsys.readouterr().err.splitlines()
    assert lines[1].startswith("  open ") and lines[1].endswith("report.html in a browser")
    assert lines[2].startswith("  re-render with: dynaprof report ")
    monkeypatch.chdir(tmp_path)  # short relative paths: both fit one line
    (tmp_path / "r").mkdir()
    print_written(tmp_path / "r", [tmp_path / "r" / "report.html"], [])
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and "in a browser; re-render with: dynaprof report" in lines[1]


def test_plural() -> None:
    from dynaprof.fmt import plural

    assert [plural(1, "compile"), plural(2, "compile"), plural(0, "line"), plural(1_000, "entry", "entries")] == [
        "1 compile", "2 compiles", "0 lines", "1,000 entries"]


def test_the_cause_table_fits_80_columns_each_row_on_the_line_of_its_label() -> None:
    """Issue: the first screen at 80 columns. Inductor's ten phase columns do not fit: the phases
    holding the most time stay, the rest fold into one column, every row stands on one line with
    the start of its label (a long label wraps inside its column, below)."""
    import re

    from dynaprof.render.terminal import OTHER_PHASES, cause_phase_lines
    from tests.factories import inductor_session
    from tests.helpers import read_table

    s = inductor_session(user_cause="a_long_user_function_name (modeling_something.py:123)")
    assert s.axes is not None and len({p for p in s.axes.matrix}) >= 5
    for width in (80, 100):
        lines = cause_phase_lines(s, width=width)
        table = lines[: next(i for i, line in enumerate(lines) if line.strip().startswith("all causes")) + 1]
        assert all(len(line) <= width for line in table), "\n".join(lines)  # prose under it is wrapped
        rows = read_table(lines, "cause")
        header = rows[0]
        assert header[-2:] == ["total", "%"]
        for line in lines:
            cells = re.split(r"\s{2,}", line.strip())
            if cells and cells[0] and re.fullmatch(r"\d+%", cells[-1]):
                assert len(cells) >= 3  # a label's first piece, numbers, its share: one line
        if width == 80:
            assert OTHER_PHASES in header


def test_below_60_columns_the_cause_table_is_a_list_that_fits() -> None:
    from dynaprof.render.terminal import cause_phase_lines
    from tests.factories import inductor_session
    from tests.helpers import read_table

    lines = cause_phase_lines(inductor_session(user_cause="a_long_user_function_name (modeling_x.py:12)"), width=44)
    rows = read_table(lines, "cause")
    assert rows[0] == ["cause", "total", "%"]
    head = next(i for i, line in enumerate(lines) if line.split()[:1] == ["cause"])
    table = lines[head : next(i for i, line in enumerate(lines) if line.strip().startswith("all causes")) + 1]
    assert all(len(line) <= 44 for line in table), "\n".join(lines)  # the prose around it is wrapped
    assert any(line.strip() == "by phase: in summary.md and report.html" for line in lines)


def test_the_first_screen_gives_ranked_findings_up_to_its_line_budget() -> None:
    """At 80 columns the Inductor session's summary is one line over the first screen's budget: its
    ranked "also:" finding gives way (counted in the line that points to the files), never the
    verdict; the full summary keeps it."""
    from dynaprof.render.terminal import SCREEN_LINES

    s = inductor_session()
    full = summary_text(s, width=80)
    screen = summary_text(s, width=80, screen=True)
    assert "    also: " in full and "also: " not in screen
    assert len(screen.splitlines()) <= SCREEN_LINES < len(screen.splitlines()) + 2  # (the line said)
    assert "hottest: parametrization" in screen and "(1 more finding, how it was made" in screen
    wide = summary_text(s, width=200, screen=True)  # room for it: nothing is given way
    assert "    also: " in wide and "more finding" not in wide
