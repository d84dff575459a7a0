"""Folded-stack and speedscope exports re-load with the same totals."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from dynaprof.analysis.stacks import View, build_tree, parse_folded, tree_from_folded
from dynaprof.model import InlineStack, Session, Stack
from dynaprof.render.base import RenderContext
from dynaprof.render.folded import folded_text, render_folded
from dynaprof.render.speedscope import SCHEMA_URL, render_speedscope
from tests.factories import DYN, FunctionTable, frame, make_session, seed_session


def multi_session() -> Session:
    t = FunctionTable()
    c = t("_compile", DYN + "convert_frame.py", 1)
    g = t("CheckFunctionManager.__init__", DYN + "guards.py", 2)
    fwd = t("forward;odd name", "/work/m.py", 3, "traced")
    prop = t("Lin.weight", "/work/m.py", 4, "property")
    stacks = [
        Stack("0/0", 0, 1, [c], [fwd], 10, 0.010),
        Stack("0/0", 0, 1, [c], [fwd, prop], 7, 0.0071234),
        Stack("0/0", 0, 1, [c, g], [], 3, 0.003),
        Stack("1/0", 0, 1, [c], [fwd], 2, 0.002),
    ]
    s = make_session([frame("0/0"), frame("1/0", start_s=4.0)], stacks, t.functions)
    s.inline_profile = [InlineStack("0/0", [fwd, prop], 4, 0.006), InlineStack("0/0", [fwd], 1, 0.001)]
    return s


@pytest.mark.parametrize("make", [seed_session, multi_session])
def test_folded_files_reload_to_the_same_totals(make: Any) -> None:
    s = make()
    files = render_folded(RenderContext(s))
    assert sorted(files) == ["stacks-compiler.folded", "stacks-traced.folded"]
    views: tuple[View, ...] = ("compiler", "traced")
    for view in views:
        text = files[f"stacks-{view}.folded"]
        assert isinstance(text, str) and text.endswith("\n")
        tree = build_tree(s, view)
        lines = parse_folded(text)
        assert all(v == int(v) and v > 0 for _, v in lines)  # integer microseconds
        assert math.isclose(sum(v for _, v in lines) / 1e6, tree.seconds, abs_tol=len(lines) * 0.5e-6)
        back = tree_from_folded(text)
        assert math.isclose(back.seconds, tree.seconds, abs_tol=len(lines) * 0.5e-6)
        assert back.node_count() == tree.node_count()


def test_folded_empty_and_names() -> None:
    assert folded_text(seed_session(with_samples=False)) == ""
    text = folded_text(multi_session(), "traced")
    assert "forward,odd name (/work/m.py:3);Lin.weight (property) (/work/m.py:4) 7123\n" in text
    with pytest.raises(ValueError, match="folded stacks exist"):
        folded_text(seed_session(), "inline")


def load_speedscope(s: Any) -> dict[str, Any]:
    files = render_speedscope(RenderContext(s))
    assert list(files) == ["speedscope.json"]
    raw = files["speedscope.json"]
    assert isinstance(raw, str)
    doc: dict[str, Any] = json.loads(raw)
    assert doc["$schema"] == SCHEMA_URL
    frames = doc["shared"]["frames"]
    assert all(isinstance(f["name"], str) for f in frames)
    for p in doc["profiles"]:
        assert p["type"] == "sampled" and p["unit"] == "seconds"
        assert len(p["samples"]) == len(p["weights"])
        assert all(0 <= i < len(frames) for sample in p["samples"] for i in sample)
        assert all(w > 0 for w in p["weights"])
        assert math.isclose(p["endValue"] - p["startValue"], sum(p["weights"]))
    assert 0 <= doc["activeProfileIndex"] < len(doc["profiles"])
    return doc


def test_speedscope_reloads_with_matching_totals() -> None:
    s = seed_session()
    doc = load_speedscope(s)
    names = [p["name"] for p in doc["profiles"]]
    assert names == ["all compiles: compiler stacks", "all compiles: traced user code"]
    views: tuple[View, ...] = ("compiler", "traced")
    for p, view in zip(doc["profiles"], views, strict=True):
        assert math.isclose(sum(p["weights"]), build_tree(s, view).seconds)
    frames = doc["shared"]["frames"]
    weight = next(f for f in frames if f["name"] == "Linear.weight (property)")
    assert weight["file"].endswith("torch/nn/utils/parametrize.py") and weight["line"] == 419
    assert any(f["name"] == "[not tracing user code]" and "file" not in f for f in frames)
    # frames are shared, not repeated
    assert len({(f["name"], f.get("file"), f.get("line")) for f in frames}) == len(frames)


def test_speedscope_per_frame_and_inline_profiles() -> None:
    s = multi_session()
    doc = load_speedscope(s)
    names = [p["name"] for p in doc["profiles"]]
    assert names == [
        "all compiles: compiler stacks",
        "all compiles: traced user code",
        "all compiles: Dynamo inline profile",
        "compile 0/0 forward: compiler stacks",
        "compile 0/0 forward: traced user code",
        "compile 1/0 forward: compiler stacks",
        "compile 1/0 forward: traced user code",
    ]
    assert math.isclose(sum(doc["profiles"][2]["weights"]), 0.007)
    assert math.isclose(sum(doc["profiles"][5]["weights"]), 0.002)


def test_speedscope_empty_session() -> None:
    doc = load_speedscope(seed_session(with_samples=False))
    assert all(p["samples"] == [] and p["endValue"] == 0 for p in doc["profiles"])


def test_speedscope_paths_go_through_the_shared_frame_table_when_functions_share_a_frame() -> None:
    # a function table that lists one function twice: both are one speedscope frame, so the
    # stack's path is not its function indices (the usual case, which skips the mapping)
    from dynaprof.model import FunctionRef

    f, g = FunctionRef("f", DYN + "a.py", 1, "python"), FunctionRef("g", DYN + "a.py", 2, "python")
    s = make_session([frame()], [Stack("0/0", 0, 1, [0, 1, 2], [], 1, 1.0)], [f, g, f])
    doc = load_speedscope(s)
    assert [fr["name"] for fr in doc["shared"]["frames"]][:2] == ["f", "g"]
    assert doc["profiles"][0]["samples"] == [[0, 1, 0]]
    plain = make_session([frame()], [Stack("0/0", 0, 1, [1, 0], [], 1, 1.0)], [f, g])
    assert load_speedscope(plain)["profiles"][0]["samples"] == [[1, 0]]


@pytest.mark.parametrize("make", [seed_session, multi_session, lambda: seed_session(with_samples=False)])
def test_speedscope_text_is_the_documents_json(make: Any) -> None:
    # the renderer writes the samples as their repr, the rest piece by piece: the same bytes as
    # json.dumps of the whole document
    from dynaprof.render.speedscope import speedscope_document, speedscope_json

    s = make()
    s.run.target = "caf\u00e9 \"x\"\n.py"  # escaped, not ASCII
    for limit in (None, 1):
        assert speedscope_json(s, limit) == json.dumps(speedscope_document(s, limit))



def test_speedscope_text_of_samples_that_are_not_plain_int_lists() -> None:
    # a hand-built session may hold tuples or bools: written as json.dumps writes them, not as repr
    from dynaprof.model import FunctionRef
    from dynaprof.render.speedscope import speedscope_document, speedscope_json

    f, g = FunctionRef("f", DYN + "a.py", 1, "python"), FunctionRef("g", DYN + "a.py", 2, "python")
    s = make_session([frame()], [Stack("0/0", 0, 1, (0, 1), [True], 1, 1.0)], [f, g])  # type: ignore[arg-type]
    assert speedscope_json(s) == json.dumps(speedscope_document(s))
