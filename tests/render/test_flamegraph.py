"""SVG flamegraphs: layout invariants, markup, escaping, colours, pruning, diffs, renderer files."""

from __future__ import annotations

import colorsys
import itertools
import math
import random
import re
import shutil
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaprof.analysis.stacks import StackNode, build_tree
from dynaprof.model import InlineStack, Stack
from dynaprof.render.base import RenderContext, RenderOptions
from dynaprof.render.colours import category_colour
from dynaprof.render.flamegraph import (
    diff_flamegraph_svg,
    flamegraph_svg,
    render_flamegraphs,
    tree_flamegraph_svg,
)
from dynaprof.render.flamegraph_layout import layout
from dynaprof.render.flamegraph_svg import fit_label, xml_attr, xml_text
from tests.factories import DYN, FunctionTable, frame, make_session, seed_session
from tests.helpers import playwright

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = ["<script>alert(1)</script>", "say \"hi\" & 'bye'", "end]]>here", "two\nlines", "ctl\x01char"]


def frames_of(svg: str) -> list[ET.Element]:
    """The per-frame <g> elements (children of the panels)."""
    root = ET.fromstring(svg.encode())
    return [g for panel in root.iter(f"{NS}g") if panel.get("class") == "fg-panel" for g in panel.findall(f"{NS}g")]


def title_of(g: ET.Element) -> str:
    t = g.find(f"{NS}title")
    assert t is not None and t.text is not None
    return t.text


def rect_of(g: ET.Element) -> ET.Element:
    r = g.find(f"{NS}rect")
    assert r is not None
    return r


def hue(colour: str) -> float:
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, g, b)[0] * 360


def random_tree(seed: int, n: int = 300) -> StackNode:
    rng = random.Random(seed)
    root = StackNode("root")
    names = [f"f{i}" for i in range(25)]
    for _ in range(n):
        path = [(rng.choice(names), "m.py", 1, "python") for _ in range(rng.randint(0, 8))]
        root.add_path(path, rng.random() * 0.01, 1)
    return root


# ---------------------------------------------------------------------------------------------
# layout


def check_layout(root: StackNode, min_width: float) -> None:
    lay = layout(root, lambda n: n.seconds, StackNode.sorted_children, min_width)
    if root.seconds <= 0:
        assert lay.rects == []
        return
    pos = {id(r.node): r for r in lay.rects}
    assert lay.rects[0].node is root and (lay.rects[0].x, lay.rects[0].width, lay.rects[0].depth) == (0, 1, 0)
    for r in lay.rects:
        assert math.isclose(r.width, r.node.seconds / root.seconds, rel_tol=1e-9)
        assert r.depth == 0 or r.width >= min_width
        assert r.depth <= lay.max_depth
        drawn = [pos[id(c)] for c in r.node.sorted_children() if id(c) in pos]
        # children in sorted order, left to right, inside the parent, at depth + 1
        for c in drawn:
            assert c.depth == r.depth + 1
            assert c.x >= r.x - 1e-9 and c.x + c.width <= r.x + r.width + 1e-9
        for a, b in itertools.pairwise(drawn):
            assert a.x + a.width <= b.x + 1e-9
            assert a.node.key < b.node.key
    drawn_total = sum(1 for _ in lay.rects)
    weighted = sum(1 for _, n in root.walk() if n.seconds > 0)
    assert drawn_total + lay.pruned_frames == weighted


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), min_width=st.sampled_from([0.0, 0.001, 0.01, 0.1]))
def test_layout_invariants(seed: int, min_width: float) -> None:
    check_layout(random_tree(seed, 60), min_width)


def test_layout_of_seed_session_and_depths() -> None:
    tree = build_tree(seed_session(), "traced")
    check_layout(tree, 0.0)
    lay = layout(tree, lambda n: n.seconds, StackNode.sorted_children)
    assert lay.max_depth == tree.depth() == 6
    assert layout(StackNode("empty"), lambda n: n.seconds, StackNode.sorted_children).rects == []


def test_pruning_counts_frames_and_time() -> None:
    root = StackNode("r")
    root.add_path([("big", "", 0, "python")], 0.999, 999)
    root.add_path([("tiny", "", 0, "python"), ("tinier", "", 0, "python")], 0.001, 1)
    lay = layout(root, lambda n: n.seconds, StackNode.sorted_children, 0.01)
    assert [r.node.name for r in lay.rects] == ["r", "big"]
    assert lay.pruned_frames == 2 and math.isclose(lay.pruned_weight, 0.001)
    svg = tree_flamegraph_svg(root, title="t", subtitle="s", options=RenderOptions(min_width=0.01))
    assert "2 frames &lt; 1% pruned (1.0 ms, 0.1% of the total)" in svg
    assert len(frames_of(svg)) == 2


# ---------------------------------------------------------------------------------------------
# SVG markup


def test_svg_parses_with_one_titled_frame_per_drawn_rect_and_script() -> None:
    s = seed_session()
    for view in ("compiler", "traced"):
        svg = flamegraph_svg(s, view)  # type: ignore[arg-type]
        tree = build_tree(s, view, user_calls=view == "compiler")  # type: ignore[arg-type]
        gs = frames_of(svg)
        assert len(gs) == tree.node_count()
        for g in gs:
            assert title_of(g) and rect_of(g).get("fill", "").startswith("#")
        assert "<![CDATA[" in svg and "function zoom" in svg and "function search" in svg
        assert "matched " in svg and "Reset zoom" in svg and "Search" in svg
        assert "http://" not in svg.replace("http://www.w3.org/2000/svg", "")  # no network


def test_titles_and_subtitles_describe_the_view() -> None:
    s = seed_session()
    svg = flamegraph_svg(s, "traced")
    assert "user-code view: every second on the user code it was spent for" in svg
    assert "1.20 s sampled of 1.20 s compile time" in svg and "1,200 samples" in svg and "950 Hz achieved" in svg
    assert "repro.py" in svg
    assert "compiler view: real Python stacks of torch.compile" in flamegraph_svg(s, "compiler")
    (weight,) = [g for g in frames_of(svg) if title_of(g).startswith("Linear.weight (property)")]
    lines = title_of(weight).split("\n")
    assert lines[1].endswith("site-packages/torch/nn/utils/parametrize.py:419")  # full path in the tooltip
    assert lines[2] == "450.0 ms, 37.50% of total, 450 samples"
    assert lines[3] == "phase: Dynamo tracing"  # the user-code view is coloured by phase
    assert "Dynamo tracing 82%" in svg and "guard building 12%" in svg  # legend: phases, % of compile
    compiler = flamegraph_svg(s, "compiler")
    # the compiler view: the parametrization cause in its own colour, the rest by phase group, each
    # label distinct from the table's, whose parametrization row prints the same share
    assert "parametrization (every phase) 70%" in compiler
    assert "Dynamo tracing, other causes 12%" in compiler and "guard building, other causes 12%" in compiler
    from dynaprof.render.markdown import summary_markdown
    assert "| parametrization | 840 ms |   |   | 840 ms | 70% |" in summary_markdown(s)
    plain = flamegraph_svg(seed_session(parametrized=False), "compiler")
    assert "other causes" not in plain and "parametrization" not in plain.split("<title>")[0]


def test_output_is_deterministic() -> None:
    a = render_flamegraphs(RenderContext(seed_session()))
    b = render_flamegraphs(RenderContext(seed_session()))
    assert a == b
    assert category_colour("dynamo_tracing", "f") == category_colour("dynamo_tracing", "f")


def saturation(colour: str) -> float:
    r, g, b = (int(colour[i : i + 2], 16) / 255.0 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, g, b)[2]


def test_parametrization_frames_stand_out() -> None:
    # in the compiler view, by each frame's own (self) category; the user-code view is by phase
    svg = flamegraph_svg(seed_session(), "compiler")
    param: list[str] = []
    other: list[str] = []
    pale: list[str] = []
    for g in frames_of(svg):
        fill = rect_of(g).get("fill", "")
        own = [line for line in title_of(g).split("\n") if line.startswith("self ")]
        if saturation(fill) < 0.4:  # a frame passing its time on: a pale tint
            pale.append(fill)
            continue
        assert own, title_of(g)  # a strong colour is always the frame's own time
        (param if own[0].endswith("parametrization (every phase)") else other).append(fill)
    assert param and other and pale
    assert all(270 <= hue(c) <= 320 for c in param)  # magenta/purple
    assert all(hue(c) <= 60 for c in other)  # Dynamo's other work: warm (the seed has no AOT/Inductor)
    root = next(g for g in frames_of(svg) if title_of(g).startswith("all compiles"))
    assert saturation(rect_of(root).get("fill", "")) < 0.4  # the root spends nothing itself


def test_hostile_names_are_escaped() -> None:
    t = FunctionTable()
    ids = [t(name, f"/work/{name}.py", 7, "traced") for name in HOSTILE]
    comp = t("<img src=x onerror=alert(2)>", '/tmp/"q"&.py', 1)
    stacks = [Stack("0/0", 0, 1, [comp], [ids[0], i], 10, 0.01 * (n + 1)) for n, i in enumerate(ids)]
    s = make_session([frame("0/0", name="<script>alert(3)</script>")], stacks, t.functions)
    s.run.target = "<script>alert(4)</script>\n]]>"
    for view in ("compiler", "traced"):
        for key in (None, "0/0"):
            svg = flamegraph_svg(s, view, key)  # type: ignore[arg-type]
            assert "<script>alert" not in svg and "<img" not in svg
            assert svg.count("]]>") == 1  # only the end of our own CDATA
            titles = [title_of(g).split("\n")[0] for g in frames_of(svg)]
            if view == "traced":
                for name in HOSTILE[:4]:
                    assert name.replace("\n", " ") in titles
                assert "ctl\ufffdchar" in titles
            else:
                assert "<img src=x onerror=alert(2)>" in titles
    assert xml_attr('a"b\nc') == "a&quot;b&#10;c"
    assert xml_text("]]>") == "]]&gt;"


def test_empty_session_renders_labelled_graph() -> None:
    for s in (seed_session(with_samples=False), make_session([frame("0/0")], [], [])):
        files = render_flamegraphs(RenderContext(s))
        assert sorted(files) == ["flame-compiler.svg", "flame-traced.svg"]
        for svg in files.values():
            assert isinstance(svg, str)
            ET.fromstring(svg.encode())
            assert frames_of(svg) == []
            assert "no samples were taken: " in svg
    assert "sampler: none" in flamegraph_svg(seed_session(with_samples=False))


def test_icicle_flips_y() -> None:
    s = seed_session()
    flame = {title_of(g).split("\n")[0]: float(rect_of(g).get("y", 0)) for g in frames_of(flamegraph_svg(s, "traced"))}
    ice_svg = flamegraph_svg(s, "traced", options=RenderOptions(icicle=True))
    ice = {title_of(g).split("\n")[0]: float(rect_of(g).get("y", 0)) for g in frames_of(ice_svg)}
    assert flame["all compiles"] == max(flame.values()) and ice["all compiles"] == min(ice.values())
    assert flame["Module.forward"] < flame["all compiles"] and ice["Module.forward"] > ice["all compiles"]


def test_labels_fit_their_frames() -> None:
    assert fit_label("abcdefghij", 6 + 6.6 * 10) == "abcdefghij"
    assert fit_label("abcdefghij", 6 + 6.6 * 6) == "abcd.."
    assert fit_label("abcdefghij", 20) == ""
    assert fit_label("abcdefghij", 6 + 6.6 * 5) == ""  # "abc.." would name nothing
    assert fit_label("ab", 6 + 6.6 * 2) == "ab"  # a short name that fits is drawn whole
    for g in frames_of(flamegraph_svg(seed_session(), "compiler")):
        text = g.find(f"{NS}text")
        assert text is not None
        assert len(text.text or "") * 6.6 <= float(rect_of(g).get("width", 0)) - 6 + 1e-6


def test_big_tree_output_stays_small() -> None:
    root = StackNode("all")
    rng = random.Random(1)
    names = [
        (f"mod{i % 50}.function_number_{i}", f"/site-packages/pkg/file{i % 90}.py", i, "python") for i in range(10_000)
    ]
    for _ in range(10_000):
        root.add_path([names[int(rng.paretovariate(1.1)) % 10_000] for _ in range(rng.randint(1, 20))], 0.001, 100)
    assert root.samples == 1_000_000
    svg = tree_flamegraph_svg(root, title="big", subtitle="synthetic", options=RenderOptions())
    assert len(svg.encode()) < 2_000_000
    assert "pruned" in svg
    frames = frames_of(svg)
    assert 10 < len(frames) < 5000
    assert all(float(rect_of(g).get("width", 0)) >= 1.18 - 0.05 for g in frames)  # 0.1% of 1180 px


# ---------------------------------------------------------------------------------------------
# differential graphs


def diff_pair() -> tuple[StackNode, StackNode]:
    a, grow, shrink, gone, born = (
        ("a", "/w/a.py", 1, "python"),
        ("grow", "/w/g.py", 2, "python"),
        ("shrink", "/w/s.py", 3, "python"),
        ("gone", "/w/x.py", 4, "python"),
        ("born", "/w/b.py", 5, "python"),
    )
    base, new = StackNode("all"), StackNode("all")
    base.add_path([a, grow], 0.1, 100)
    base.add_path([a, shrink], 0.4, 400)
    base.add_path([gone], 0.2, 200)
    new.add_path([a, grow], 0.5, 500)
    new.add_path([a, shrink], 0.1, 100)
    new.add_path([born], 0.1, 100)
    return base, new


def panel_frames(svg: str) -> list[dict[str, str]]:
    root = ET.fromstring(svg.encode())
    out = []
    for i, panel in enumerate(p for p in root.iter(f"{NS}g") if p.get("class") == "fg-panel"):
        for g in panel.findall(f"{NS}g"):
            out.append(
                {
                    "panel": str(i),
                    "name": title_of(g).split("\n")[0],
                    "title": title_of(g),
                    "fill": rect_of(g).get("fill", ""),
                    "width": rect_of(g).get("width", ""),
                }
            )
    return out


def redness(c: str) -> int:
    return int(c[1:3], 16) - int(c[5:7], 16)


def test_diff_flamegraph_red_more_blue_less_and_removed_stacks() -> None:
    base, new = diff_pair()
    svg = diff_flamegraph_svg(base, new, title="cmp <b>", subtitle="s", options=RenderOptions())
    frames = panel_frames(svg)
    new_panel = {f["name"]: f for f in frames if f["panel"] == "0"}
    base_panel = {f["name"]: f for f in frames if f["panel"] == "1"}
    assert "gone" not in new_panel and "gone" in base_panel  # removed stacks still shown
    assert "born" in new_panel and "born" not in base_panel
    assert redness(new_panel["grow"]["fill"]) > 100  # red: more time in NEW
    assert redness(new_panel["shrink"]["fill"]) < -100  # blue: less
    assert redness(base_panel["gone"]["fill"]) < 0
    assert abs(redness(new_panel["grow"]["fill"])) > abs(redness(new_panel["born"]["fill"]))  # intensity by delta
    assert "base 100.0 ms, new 500.0 ms, delta +400.0 ms (+400.0%)" in new_panel["grow"]["title"]
    assert "removed in NEW" in base_panel["gone"]["title"]
    assert float(new_panel["grow"]["width"]) > float(new_panel["shrink"]["width"])  # widths from NEW
    assert float(base_panel["grow"]["width"]) < float(base_panel["shrink"]["width"])  # widths from BASE
    assert "cmp &lt;b&gt;" in svg


def test_diff_normalize_compares_shares() -> None:
    base, new = StackNode("all"), StackNode("all")
    a, b = ("a", "", 0, "python"), ("b", "", 0, "python")
    base.add_path([a], 1.0, 1)
    base.add_path([b], 1.0, 1)
    new.add_path([a], 2.0, 1)
    new.add_path([b], 2.0, 1)  # twice the time everywhere, same shares
    raw = panel_frames(diff_flamegraph_svg(base, new, title="t", subtitle="s", options=RenderOptions()))
    norm = panel_frames(
        diff_flamegraph_svg(base, new, title="t", subtitle="s", options=RenderOptions(), normalize=True)
    )
    leaves = [f for f in raw if not f["title"].startswith("all")]
    assert leaves and all(redness(f["fill"]) > 0 for f in leaves)  # their own time grew
    assert all(redness(f["fill"]) == 0 for f in norm)
    assert "delta +0.00 points" in norm[1]["title"]


# ---------------------------------------------------------------------------------------------
# renderer files


def test_render_flamegraphs_files_per_frame_and_inline() -> None:
    t = FunctionTable()
    c = t("_compile", DYN + "convert_frame.py", 1)
    fwd = t("forward", "/work/m.py", 2, "traced")
    stacks = [Stack("0/0#1", 0, 1, [c], [fwd], 10, 0.01), Stack("1/0", 0, 1, [c], [], 5, 0.005)]
    s = make_session([frame("0/0#1", generation=1), frame("1/0")], stacks, t.functions)
    s.inline_profile = [InlineStack("0/0#1", [fwd], 3, 0.004)]
    files = render_flamegraphs(RenderContext(s))
    assert sorted(files) == [
        "flame-compiler.svg", "flame-inline.svg", "flame-traced.svg",
        "flames/0_0-1-compiler.svg", "flames/0_0-1-traced.svg", "flames/1_0-compiler.svg", "flames/1_0-traced.svg",
    ]  # fmt: skip
    inline = files["flame-inline.svg"]
    assert isinstance(inline, str)
    assert "per-inline tracing time (records only inlines that finished)" in inline
    assert "3 calls at this path" in inline
    per_frame = files["flames/1_0-compiler.svg"]
    assert isinstance(per_frame, str) and "compile 1/0 forward" in per_frame
    assert sorted(render_flamegraphs(RenderContext(seed_session()))) == ["flame-compiler.svg", "flame-traced.svg"]


@pytest.mark.browser
def test_zoom_and_search_in_chromium() -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    pytest.importorskip("playwright.sync_api")
    if chromium is None:
        pytest.skip("no chromium")
    svg = flamegraph_svg(seed_session(), "traced")
    with playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_content(f"<html><body>{svg.split('?>', 1)[1]}</body></html>")
        page.evaluate("document.querySelector('svg').dynaprofFlame.search('get_param')")
        assert re.fullmatch(r"matched 70\.0% \(840\.0 ms\)", page.text_content(".fg-matched") or "")
        page.locator(".fg-panel > g", has_text="Linear.bias").first.click()
        assert page.locator(".fg-unzoom").is_visible()
        width = page.locator(".fg-panel > g", has_text="Linear.bias").first.locator("rect").get_attribute("width")
        assert width == "1180.0"
        page.locator(".fg-unzoom").click()
        assert not page.locator(".fg-unzoom").is_visible()
        browser.close()
    assert errors == []


def test_diff_panels_scale_with_their_totals_colour_by_self_change_and_mark_one_run_frames() -> None:
    base, new = StackNode("all"), StackNode("all")
    a, b, gone, born = (("a", "", 0, "python"), ("b", "", 0, "python"), ("gone", "", 0, "python"),
                        ("born", "", 0, "python"))
    base.add_path([a, gone], 1.0, 1)
    base.add_path([b], 1.0, 1)
    new.add_path([a], 0.5, 1)  # a's own time grows, its callee vanished: its inclusive time shrinks
    new.add_path([b, born], 0.5, 1)
    svg = diff_flamegraph_svg(base, new, title="t", subtitle="s", options=RenderOptions())
    frames = panel_frames(svg)
    roots = {f["panel"]: float(f["width"]) for f in frames if f["name"] == "all"}
    assert roots["1"] == pytest.approx(1180.0)  # BASE (2 s) is the larger: the full width
    assert roots["0"] == pytest.approx(1180.0 * 1.0 / 2.0, abs=0.1)  # NEW (1 s): half of it
    new_panel = {f["name"]: f for f in frames if f["panel"] == "0"}
    base_panel = {f["name"]: f for f in frames if f["panel"] == "1"}
    assert redness(new_panel["all"]["fill"]) == 0  # the root spends nothing itself: not the reddest
    assert redness(new_panel["a"]["fill"]) > 0  # own time 0 -> 0.5 s: red, though a shrank overall
    assert redness(base_panel["gone"]["fill"]) < 0  # own time 1 s -> 0: blue
    root = ET.fromstring(svg.encode())
    marked = {(g.findtext(f"{NS}title") or "").split("\n")[0]: (g.find(f"{NS}rect"), g.findtext(f"{NS}text") or "")
              for g in root.iter(f"{NS}g") if g.find(f"{NS}rect") is not None and g.find(f"{NS}title") is not None}
    born_rect, born_label = marked["born"]
    gone_rect, gone_label = marked["gone"]
    assert born_rect is not None and born_rect.get("stroke") and born_label.startswith("+ ")
    assert gone_rect is not None and gone_rect.get("stroke") and gone_label.startswith("- ")
    assert born_rect.get("stroke") != gone_rect.get("stroke")
    a_rect, a_label = marked["a"]
    assert a_rect is not None and not a_rect.get("stroke") and not a_label.startswith(("+", "-"))
    assert "only in NEW" in svg and "only in BASE" in svg  # the legend says what the marks are


def test_hover_line_and_matched_never_share_a_line() -> None:
    svg = flamegraph_svg(seed_session(), "compiler")
    root = ET.fromstring(svg.encode())
    ys = {t.get("class"): float(t.get("y", "0")) for t in root.iter(f"{NS}text")
          if t.get("class") in ("fg-details", "fg-matched")}
    assert ys["fg-matched"] >= ys["fg-details"] + 14


def test_compare_report_uses_the_diff_graph_red_and_blue() -> None:
    from dynaprof.render.flamegraph_svg import diff_colour
    from dynaprof.render.html_toolkit import asset

    css = asset("report.css")
    down = re.search(r"\.dp-down \{ color: (#[0-9a-f]{6}); \}", css)
    assert down is not None and down.group(1) == diff_colour(-1.0)  # less time: blue in both
    up = re.search(r"\.dp-up \{ color: (#[0-9a-f]{6}); \}", css)
    assert up is not None and redness(up.group(1)) > 100
