"""report.html: self-contained (no external URL anywhere), escaped, with every section."""

from __future__ import annotations

import json
import re

from dynaprof.model import GraphBreak, PropertyTrace, Session, Stack
from dynaprof.render.base import RenderContext
from dynaprof.render.report_html import render_html
from tests.factories import SP, FunctionTable, frame, make_session, seed_session
from tests.helpers import HOSTILE_HTML as HOSTILE
from tests.helpers import assert_self_contained, big_session, parse


def report(session: object) -> str:
    out = render_html(RenderContext(session))  # type: ignore[arg-type]
    assert list(out) == ["report.html"]
    text = out["report.html"]
    assert isinstance(text, str)
    return text


def hostile_session() -> Session:
    t = FunctionTable()
    fn = t(HOSTILE, "/work/<evil>.py", 3, "traced")
    comp = t(HOSTILE + "compiler", SP + "torch/_dynamo/convert_frame.py", 3)
    f = frame("0/0", name=HOSTILE, filename="/work/<evil>.py", restarts=1, restart_reasons=[HOSTILE],
              recompile_reason=HOSTILE, fail_reason=HOSTILE, graph_breaks=1,
              graph_break_reasons=[GraphBreak(HOSTILE, "/w/<b>.py", 2)], phases={HOSTILE: 0.5},
              properties=[PropertyTrace(HOSTILE, "O", "w", SP + "torch/nn/utils/parametrize.py", 1, True, 1, 1, 0.5)])
    s = make_session([f], [Stack("0/0", 1, 1, [comp], [fn], 1, 0.5)], t.functions)
    s.run.target = HOSTILE
    s.run.command = ["dynaprof", "run", HOSTILE]
    s.capture.warnings = [HOSTILE]
    return s


def test_seed_report_sections() -> None:
    text = report(seed_session())
    assert text.startswith("<!DOCTYPE html>")
    assert 'id="attribution"' not in text  # one breakdown: the cause x phase table
    for anchor in ("summary", "causes", "flamegraphs", "callgraph", "frames", "properties", "traced",
                   "compiles", "environment"):
        assert f'id="{anchor}"' in text, anchor
    assert "parametrization (64 properties via Parametrization" in text
    assert text.count('class="dynaprof-flame"') >= 2  # compiler and traced flamegraphs, inlined
    assert "<?xml" not in text
    assert 'class="dp-table sortable"' in text
    assert '<details class="dp-frame">' in text
    assert_self_contained(text)


def test_json_island_round_trips() -> None:
    text = report(seed_session())
    c = parse(text)
    island = [data for attrs, data in c.scripts if attrs.get("id") == "dp-data"]
    assert len(island) == 1
    data = json.loads(island[0])
    assert data["verdict"].startswith("parametrization (64 properties via Parametrization")
    assert data["totals"]["frames"] == 1


def test_hostile_names_escaped() -> None:
    text = report(hostile_session())
    assert "<img" not in text
    c = parse(text)
    assert "img" not in c.tags
    assert not any(k.startswith("on") for _, k, _ in c.attrs)  # no event handler attribute anywhere
    code = [data for attrs, data in c.scripts if attrs.get("type") != "application/json"]
    assert code and not any("alert(" in s for s in code)  # user text never lands in executable script
    island = next(data for attrs, data in c.scripts if attrs.get("id") == "dp-data")
    assert "<" not in island and ">" not in island
    assert json.loads(island)["target"] == HOSTILE
    assert_self_contained(text)


def test_no_samples_report() -> None:
    text = report(seed_session(with_samples=False))
    assert "No samples" in text
    assert_self_contained(text)


def test_empty_session_report() -> None:
    text = report(make_session([]))
    assert "no torch.compile compilation happened" in text
    assert_self_contained(text)


def test_large_session_report_is_bounded() -> None:
    text = report(big_session(3000))
    assert "... and 1,000 more frames not shown" in text  # frames table shows 2,000
    assert "faster compiles not shown" in text  # per-compile sections show 200
    assert len(text) < 20_000_000
    assert_self_contained(text)


def test_user_code_view_first_compiler_view_boxed_and_per_compile_graphs_linked() -> None:
    from dynaprof.render.registry import render_all

    ctx = RenderContext(big_session(5))
    ctx.use_dot = False
    files = render_all(ctx)
    text = files["report.html"]
    assert isinstance(text, str)
    views = re.findall(r'<div class="dp-graph dp-flame( dp-box)?" data-view="(\w+)"', text)
    assert [v for _, v in views] == ["traced", "compiler"]  # the user's code first
    assert dict((v, box) for box, v in views) == {"traced": "", "compiler": " dp-box"}  # fixed-height box
    links = [u for tag, attr, u in parse(text).urls if tag == "a" and not u.startswith("#")]
    assert len(links) == 10 and all(u.startswith("flames/") for u in links)
    assert all(u in files for u in links)  # every link target is a file this render wrote
    one = render_html(RenderContext(seed_session()))["report.html"]  # one compile: no per-compile files
    assert "flames/" not in one
