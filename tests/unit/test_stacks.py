"""Stack trees, folded stacks, diffs and safe keys (dynaprof.analysis.stacks)."""

from __future__ import annotations

import math

import pytest

from dynaprof.analysis.attribution import stack_categories
from dynaprof.analysis.stack_diff import diff_paths, diff_trees, portable_tree
from dynaprof.analysis.stacks import (
    NOT_TRACING,
    ROOT_ALL,
    StackNode,
    build_tree,
    display_name,
    folded_label,
    folded_lines,
    frames_with_samples,
    parse_folded,
    short_filename,
    tree_from_folded,
)
from dynaprof.fmt import safe_key
from dynaprof.model import FunctionRef, InlineStack, Session, Stack
from dynaprof.model.session import PHASES
from tests.factories import DYN, SP, FunctionTable, frame, make_session, seed_session


def two_frame_session() -> Session:
    t = FunctionTable()
    c = t("_compile", DYN + "convert_frame.py", 10)
    run = t("InstructionTranslatorBase.run", DYN + "symbolic_convert.py", 20)
    g = t("CheckFunctionManager.__init__", DYN + "guards.py", 30)
    fwd = t("Model.forward", "/work/m.py", 5, "traced")
    helper = t("helper", "/work/m.py", 9, "traced")
    stacks = [
        Stack("0/0", 0, 1, [c, run], [fwd], 100, 0.10),
        Stack("0/0", 0, 1, [c, run], [fwd, helper], 50, 0.05),
        Stack("0/0", 0, 1, [c, g], [], 30, 0.03),
        Stack("1/0", 0, 1, [c, run], [fwd], 20, 0.02),
        Stack("1/0", 0, 1, [c], [], 10, 0.01),
        Stack(None, 0, 1, [], [], 5, 0.005),
    ]
    frames = [frame("0/0", compile_time_s=0.2), frame("1/0", start_s=3.0, compile_time_s=0.05, trace_id="1/0")]
    return make_session(frames, stacks, t.functions)


def test_compiler_tree_totals_and_structure() -> None:
    s = seed_session()
    tree = build_tree(s, "compiler")
    tree.self_check()
    assert tree.name == ROOT_ALL
    assert s.samples is not None
    assert math.isclose(tree.seconds, s.samples.seconds)
    assert tree.samples == s.samples.count
    comp = tree.find("_compile")
    assert comp is not None and math.isclose(comp.seconds, tree.seconds)
    guards = tree.find("_compile", "CheckFunctionManager.__init__")
    assert guards is not None and math.isclose(guards.seconds, 0.15) and guards.samples == 150
    assert guards.dominant_category() == "guard_building"
    # categories add up to the node's time at every node
    for _, node in tree.walk():
        assert math.isclose(sum(node.categories.values()), node.seconds, abs_tol=1e-12)


def test_traced_tree_puts_untraced_time_on_the_frame_root_by_cause_and_phase() -> None:
    # the user-code view is whole-pipeline now: time outside Dynamo's tracing is no longer under
    # "[not tracing user code]" but under the compiled frame's root, its cause, then its phase
    s = seed_session()
    tree = build_tree(s, "traced")
    tree.self_check()
    assert s.samples is not None
    assert math.isclose(tree.seconds, s.samples.seconds)  # adds up to all sampled time
    assert tree.find(NOT_TRACING) is None
    whole = tree.find("Module.forward", "[whole graph]")
    assert whole is not None and whole.kind == "cause"
    assert sorted(c.name for c in whole.sorted_children()) == ["[guard building]", "[other]"]
    assert math.isclose(whole.seconds, 0.21)
    prop = tree.find("Module.forward", "Sequential.forward", "Linear.forward", "Linear.weight")
    assert prop is not None and prop.kind == "property"
    assert prop.dominant_category(PHASES) == "dynamo_tracing"  # the user-code view's nodes hold phases
    assert display_name(prop) == "Linear.weight (property)"


def test_frame_filter_and_root_label() -> None:
    s = two_frame_session()
    assert frames_with_samples(s) == ["0/0", "1/0"]
    t0 = build_tree(s, "compiler", "0/0")
    t1 = build_tree(s, "compiler", "1/0")
    everything = build_tree(s, "compiler")
    assert math.isclose(t0.seconds, 0.18) and t0.samples == 180
    assert math.isclose(t1.seconds, 0.03)
    assert math.isclose(everything.seconds, 0.215)  # includes the frame-less stack
    assert t0.name == "0/0 forward" and t0.filename == "/work/repro.py"
    assert everything.find("[no compiler stack]") is not None
    assert build_tree(s, "compiler", "nope").seconds == 0


def test_precomputed_categories_give_the_same_tree() -> None:
    s = two_frame_session()
    a = build_tree(s, "traced")
    b = build_tree(s, "traced", categories=stack_categories(s))
    assert folded_lines(a) == folded_lines(b)


def test_inline_view_sums_self_time_and_uses_attribution_rules() -> None:
    t = FunctionTable()
    fwd = t("Model.forward", "/work/m.py", 5, "traced")
    prop = t("Lin.weight", SP + "torch/nn/utils/parametrize.py", 419, "property")
    get = t("get_parametrized", SP + "torch/nn/utils/parametrize.py", 419, "traced")
    helper = t("helper", "/work/m.py", 9, "traced")
    s = make_session([frame("0/0")], None, t.functions)
    s.inline_profile = [
        InlineStack("0/0", [fwd], 1, 0.1),
        InlineStack("0/0", [fwd, prop, get], 4, 0.3),
        InlineStack("0/0", [fwd, helper], 2, 0.05),
        InlineStack("1/0", [fwd, helper], 1, 0.5),
    ]
    tree = build_tree(s, "inline")
    tree.self_check()
    assert math.isclose(tree.seconds, 0.95)
    assert tree.samples == 8  # calls
    p = tree.find("Model.forward", "Lin.weight")
    assert p is not None and p.dominant_category() == "parametrization"
    h = tree.find("Model.forward", "helper")
    assert h is not None and h.dominant_category() == "dynamo_tracing" and h.self_samples == 3
    assert math.isclose(build_tree(s, "inline", "0/0").seconds, 0.45)


def test_no_samples_gives_empty_root() -> None:
    s = seed_session(with_samples=False)
    for view in ("compiler", "traced", "inline"):
        tree = build_tree(s, view)  # type: ignore[arg-type]
        assert tree.seconds == 0 and not tree.children
    with pytest.raises(ValueError, match="unknown view"):
        build_tree(s, "bogus")  # type: ignore[arg-type]


def test_children_are_sorted_deterministically() -> None:
    root = StackNode("r")
    for name in ("zeta", "alpha", "Mid", "beta"):
        root.add_path([(name, "f.py", 1, "python")], 1.0, 1)
    assert [c.name for c in root.sorted_children()] == ["Mid", "alpha", "beta", "zeta"]
    root.add_path([("aardvark", "f.py", 1, "python")], 1.0, 1)  # cache invalidated
    assert [c.name for c in root.sorted_children()][:2] == ["Mid", "aardvark"]


def test_self_check_catches_children_heavier_than_parent() -> None:
    root = StackNode("r", seconds=1.0, samples=1)
    root.children[("c", "", 0, "python")] = StackNode("c", seconds=2.0, samples=1)
    with pytest.raises(AssertionError, match="sum to"):
        root.self_check()


def test_deep_stacks_do_not_recurse() -> None:
    root = StackNode("r")
    path = [(f"f{i}", "x.py", i, "python") for i in range(5000)]
    root.add_path(path, 1.0, 1)
    root.self_check()
    assert root.depth() == 5000
    lines = folded_lines(root)
    assert len(lines) == 1 and lines[0].endswith(" 1000000")
    assert diff_trees(root, root).base_s == 1.0


def test_folded_round_trip_keeps_totals_and_paths() -> None:
    s = two_frame_session()
    for view in ("compiler", "traced"):
        tree = build_tree(s, view)  # type: ignore[arg-type]
        text = "\n".join(folded_lines(tree)) + "\n"
        back = tree_from_folded(text)
        back.self_check()
        assert math.isclose(back.seconds, tree.seconds, abs_tol=1e-6)
        assert folded_lines(back) == folded_lines(tree)
        samples = tree_from_folded("\n".join(folded_lines(tree, unit="samples")), unit="samples")
        assert samples.samples == tree.samples


def test_folded_labels_escape_separators() -> None:
    root = StackNode("r")
    root.add_path([("a;b\nc", "/x/site-packages/pkg/m.py", 3, "python"), ("p", "", 0, "property")], 0.002, 2)
    (line,) = folded_lines(root)
    assert line == "a,b c (pkg/m.py:3);p (property) 2000"
    frames, value = parse_folded(line)[0]
    assert frames == ["a,b c (pkg/m.py:3)", "p (property)"] and value == 2000
    assert folded_label(root) == "r"
    assert folded_lines(root, include_root=True)[0].startswith("r;")


def test_parse_folded_rejects_garbage() -> None:
    assert parse_folded("# comment\n\n a;b 3\n") == [(["a", "b"], 3.0)]
    with pytest.raises(ValueError, match="line 1"):
        parse_folded("a;b three")
    with pytest.raises(ValueError, match="no stack"):
        parse_folded(" 5")


def test_diff_trees_union_of_paths() -> None:
    base, new = StackNode("base"), StackNode("new")
    a, b, c = ("a", "", 0, "python"), ("b", "", 0, "python"), ("c", "", 0, "python")
    base.add_path([a, b], 1.0, 10)
    base.add_path([c], 0.5, 5)
    new.add_path([a, b], 2.0, 20)
    new.add_path([a], 0.25, 2)
    d = diff_trees(base, new)
    assert d.name == "new" and (d.base_s, d.new_s) == (1.5, 2.25)
    assert (d.children[c].base_s, d.children[c].new_s) == (0.5, 0.0)
    assert d.children[a].children[b].delta_s == 1.0
    paths = diff_paths(base, new)
    assert paths == {(): (1.5, 2.25), ("a",): (1.0, 2.25), ("a", "b"): (1.0, 2.0), ("c",): (0.5, 0.0)}


def test_diff_matches_frames_across_environments() -> None:
    base, new = StackNode("base"), StackNode("new")
    base.add_path([("_compile", "/venv-a/lib/python3.11/site-packages/torch/x.py", 10, "python")], 1.0, 1, "other")
    new.add_path([("_compile", "/opt/env/lib/python3.12/site-packages/torch/x.py", 12, "python")], 3.0, 3, "other")
    d = diff_trees(base, new)
    (child,) = d.children.values()
    assert (child.name, child.filename, child.base_s, child.new_s) == ("_compile", "torch/x.py", 1.0, 3.0)
    assert len(diff_trees(base, new, portable=False).children) == 2
    # merging keeps totals and categories
    base.add_path([("_compile", "/elsewhere/site-packages/torch/x.py", 99, "python")], 0.5, 1, "other")
    merged = portable_tree(base)
    merged.self_check()
    (only,) = merged.children.values()
    assert only.seconds == 1.5 and only.samples == 2 and only.categories == {"other": 1.5}


@pytest.mark.parametrize(
    ("key", "expected"),
    [("0/0", "0_0"), ("0/0#1", "0_0-1"), ("!0/0/0", "x0_0_0"), ("1/2 x", "1_2_x"), ("", "_"), ("../x", "_.._x")],
)
def test_safe_key(key: str, expected: str) -> None:
    assert safe_key(key) == expected


def test_short_filename_and_display_names() -> None:
    assert short_filename(SP + "torch/_dynamo/guards.py") == "torch/_dynamo/guards.py"
    assert short_filename("/usr/lib/python3.11/importlib/__init__.py") == "importlib/__init__.py"
    assert short_filename("/work/repro.py") == "/work/repro.py"
    assert display_name(FunctionRef("Linear.weight", "x", 1, "property")) == "Linear.weight (property)"
    assert display_name(FunctionRef("memcpy", "libc.so", 0, "native")) == "memcpy [native]"
    assert display_name(FunctionRef("a\nb", "x", 1)) == "a b"


def test_pruned_tree_matches_the_full_tree_above_the_threshold() -> None:
    from dynaprof.analysis.pruned_tree import build_pruned_tree

    s = seed_session()
    for view in ("compiler", "traced"):
        full = build_tree(s, view)  # type: ignore[arg-type]
        for min_width in (0.0, 0.045, 0.3):
            pruned, count, secs = build_pruned_tree(s, view, None, min_width)  # type: ignore[arg-type]
            assert pruned.seconds == pytest.approx(full.seconds)
            kept = {k: n for k, n in _flatten(full).items() if n.seconds >= min_width * full.seconds}
            got = _flatten(pruned)
            assert set(got) == set(kept)
            for k, node in got.items():
                assert node.seconds == pytest.approx(kept[k].seconds)
                assert node.self_seconds == pytest.approx(kept[k].self_seconds)
                assert node.categories == pytest.approx(kept[k].categories)
            cut = [n for k, n in _flatten(full).items() if k not in kept and k[:-1] in kept]
            assert count == len(cut) and secs == pytest.approx(sum(n.seconds for n in cut))


def _flatten(root: StackNode) -> dict[tuple[object, ...], StackNode]:
    out: dict[tuple[object, ...], StackNode] = {}
    todo: list[tuple[tuple[object, ...], StackNode]] = [((), root)]
    while todo:
        path, node = todo.pop()
        out[path] = node
        todo.extend(((*path, c.key), c) for c in node.children.values())
    return out


def test_drawn_trees_gather_one_sample_chains() -> None:
    """A frame seen by one sample is one timer tick: drawn trees (``gather``) put it with its
    narrow siblings, one level, instead of a 20-frame tower of single ticks; the seconds stay."""
    from dynaprof.analysis.pruned_tree import GATHERED_PREFIX, build_pruned_tree

    t = FunctionTable()
    base = [t("compile", SP + "torch/_dynamo/convert_frame.py", 1)]
    tower = base + [t(f"deep{i}", SP + "torch/_dynamo/variables/builder.py", i) for i in range(20)]
    stacks = [Stack("0/0", 0, 1, [*base, t("wide", SP + "torch/_dynamo/guards.py", 2)], [], 50, 0.05),
              Stack("0/0", 0, 1, tower, [], 1, 0.001)]
    s = make_session([frame()], stacks, t.functions)
    drawn, pruned, hidden = build_pruned_tree(s, "compiler", None, 0.001, gather=True)
    assert drawn.depth() + 1 == 3  # root, compile, then "wide" beside the gathered tick
    (compile_node,) = drawn.children.values()
    names = sorted(c.name for c in compile_node.children.values())
    assert names[0] == "wide" and names[1].startswith(GATHERED_PREFIX)
    assert (pruned, hidden) == (0, 0.0) and drawn.seconds == pytest.approx(0.051)
    full, _, _ = build_pruned_tree(s, "compiler", None, 0.001)  # not gathered: every frame kept
    assert full.depth() + 1 == 22  # root, compile, 20 ticks
