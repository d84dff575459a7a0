"""Call graphs: building from cProfile and samples, pruning, collapsing, parametrization path,
and the DOT writer (goldens: DYNAPROF_UPDATE_GOLDENS=1 rewrites tests/golden/callgraph_*.dot)."""

from __future__ import annotations

import difflib
import itertools
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dynaprof.analysis import callgraph as cgm
from dynaprof.analysis.pstats_tools import PStatsTable, func_label
from dynaprof.model.session import FunctionRef
from dynaprof.render import callgraph as rcg
from dynaprof.render.base import RenderContext, RenderOptions
from tests.factories import seed_session
from tests.helpers import TESTS_DIR

GOLDEN = TESTS_DIR / "golden"
P = "/venv/lib/python3.11/site-packages/"
CF, SC = P + "torch/_dynamo/convert_frame.py", P + "torch/_dynamo/symbolic_convert.py"
UD, FN = P + "torch/_dynamo/variables/user_defined.py", P + "torch/_dynamo/variables/functions.py"
BU, GU = P + "torch/_dynamo/variables/builder.py", P + "torch/_dynamo/guards.py"

COMP, RUN, STEP, LOAD = (CF, 1633, "_compile"), (SC, 1943, "run"), (SC, 1556, "step"), (SC, 3158, "_load_attr")
RDD, TP, INL = (UD, 3386, "resolve_data_descriptor"), (FN, 4565, "tp_descr_get_impl"), (SC, 5953, "inline_call_")
BCALL, BWRAP, GUARDS = (BU, 787, "__call__"), (BU, 1034, "_wrap"), (GU, 2700, "__init__")
TINY, ISINST = ("/usr/lib/python3.11/inspect.py", 10, "tiny"), ("~", 0, "<built-in method builtins.isinstance>")


def e(calls: int, ct: float) -> tuple[int, int, float, float]:
    return (calls, calls, ct / 4, ct)


def small_table() -> PStatsTable:
    """A compile of 2 s: tracing reaches a @property (resolve_data_descriptor -> tp_descr_get_impl)."""
    t: dict[Any, tuple[Any, ...]] = {
        COMP: (1, 1, 0.05, 2.0, {}),
        RUN: (1, 11, 0.05, 1.6, {COMP: e(1, 1.6), INL: e(10, 1.0)}),
        STEP: (30, 30, 0.10, 1.55, {RUN: e(30, 1.55)}),
        LOAD: (20, 20, 0.10, 1.2, {STEP: e(20, 1.2)}),
        RDD: (64, 64, 0.05, 1.1, {LOAD: e(64, 1.1)}),
        TP: (64, 64, 0.05, 1.05, {RDD: e(64, 1.05)}),
        INL: (64, 64, 1.00, 1.0, {TP: e(64, 1.0)}),
        BCALL: (100, 100, 0.05, 0.3, {STEP: e(100, 0.3)}),
        BWRAP: (100, 100, 0.2, 0.25, {BCALL: e(100, 0.25)}),
        GUARDS: (1, 1, 0.28, 0.3, {COMP: e(1, 0.3)}),
        TINY: (1, 1, 0.005, 0.005, {STEP: e(1, 0.005)}),
        ISINST: (50, 50, 0.07, 0.07, {GUARDS: e(40, 0.069), BWRAP: e(10, 0.001)}),
    }
    return t


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("DYNAPROF_UPDATE_GOLDENS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"missing golden {path}; create it with DYNAPROF_UPDATE_GOLDENS=1"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(path), "actual"))
        pytest.fail(f"{name} differs from its golden (DYNAPROF_UPDATE_GOLDENS=1 to accept):\n{diff[:6000]}")


def dot_counts(text: str) -> tuple[int, int]:
    nodes = re.findall(r'^  "n\d+" \[', text, re.M)
    edges = re.findall(r'^  "n\d+" -> "n\d+" \[', text, re.M)
    return len(nodes), len(edges)


def test_graph_from_pstats_exact_counts() -> None:
    g = cgm.graph_from_pstats(small_table())
    run = g.nodes[func_label(RUN)]
    assert (run["calls"], run["primitive_calls"], run["inclusive_s"], run["self_s"]) == (11, 1, 1.6, 0.05)
    assert g.edges[func_label(RDD), func_label(TP)]["calls"] == 64
    assert g.edges[func_label(INL), func_label(RUN)]["seconds"] == 1.0
    assert g.nodes[func_label(GUARDS)]["category"] == "guard_building"
    assert g.nodes[func_label(BWRAP)]["category"] == "fake_tensor"
    assert g.nodes[func_label(STEP)]["category"] == "dynamo_tracing"


def test_prune_and_dot_counts_match() -> None:
    cg = cgm.build_callgraph(seed_session(), small_table())
    assert cg is not None and cg.source == "cprofile"
    assert (cg.nodes_total, cg.edges_total) == (12, 13)
    assert func_label(TINY) not in cg.graph  # 0.25% < 0.5%
    assert not cg.graph.has_edge(func_label(BWRAP), func_label(ISINST))  # 0.05% < 0.1%
    assert cg.graph.has_edge(func_label(GUARDS), func_label(ISINST))
    text = rcg.callgraph_dot(cg, "t")
    assert dot_counts(text) == (cg.graph.number_of_nodes(), cg.graph.number_of_edges()) == (11, 11)
    assert "showing 11 of 12 nodes, 11 of 13 edges; thresholds 0.5%/0.1%" in text


def test_parametrization_path_from_pstats() -> None:
    g = cgm.graph_from_pstats(small_table(), parametrized=True)
    on = {n for n in g if g.nodes[n]["param_path"]}
    assert on == {func_label(k) for k in (COMP, RUN, STEP, LOAD, RDD, TP)}
    assert g.nodes[func_label(RDD)]["category"] == "parametrization" and g.nodes[func_label(RDD)]["parametrization"]
    assert g.edges[func_label(STEP), func_label(LOAD)]["param_path"]
    assert not g.edges[func_label(STEP), func_label(BCALL)]["param_path"]
    plain = cgm.graph_from_pstats(small_table(), parametrized=False)
    assert not any(plain.nodes[n]["param_path"] for n in plain)
    assert not cgm.parametrized_evidence(seed_session(parametrized=False), small_table())
    assert cgm.parametrized_evidence(seed_session(), None)


def test_samples_graph_of_seed_session_highlights_parametrization() -> None:
    # folded (the default, as the compiler flamegraph): one node per traced user function, the
    # parametrized properties marked where Dynamo resolved them
    s = seed_session()
    cg = cgm.build_callgraph(s, None)
    assert cg is not None and cg.source == "samples"
    g = cg.graph
    by_name = {g.nodes[n]["name"]: n for n in g}
    assert "InstructionTranslatorBase.run" not in by_name  # the interpreter's cycle is folded away
    weight = by_name["Linear.weight (property)"]
    assert g.nodes[weight]["parametrization"] and g.nodes[weight]["category"] == "parametrization"
    path = [by_name[x] for x in ("_compile", "compile_frame", "Module.forward", "Sequential.forward",
                                 "Linear.forward", "Linear.weight (property)")]
    assert all(g.nodes[n]["param_path"] for n in path)
    assert all(g.edges[a, b]["param_path"] for a, b in itertools.pairwise(path))
    assert not g.nodes[by_name["CheckFunctionManager.__init__"]]["param_path"]
    assert g.nodes[weight]["inclusive_s"] == pytest.approx(0.45)
    assert g.nodes[by_name["Module.forward"]]["category"] == "dynamo_tracing"
    assert weight.endswith(" [inlined property]")  # not the compiler's own frame of that name
    check_golden("callgraph_samples.dot", rcg.callgraph_dot(cg))


def test_unfolded_samples_graph_highlights_parametrization() -> None:
    s = seed_session()
    g = cgm.graph_from_samples(s, user_calls=False)
    cg = cgm.CallGraph(cgm.prune(g, 1.2, 0.005, 0.001), "samples", 1.2, g.number_of_nodes(), g.number_of_edges(),
                       0.005, 0.001, False)
    g = cg.graph
    by_name = {g.nodes[n]["name"]: n for n in g}
    rdd = by_name["UserDefinedObjectVariable.resolve_data_descriptor"]
    assert g.nodes[rdd]["parametrization"] and g.nodes[rdd]["category"] == "parametrization"
    path = [by_name[x] for x in ("_compile", "compile_frame", "InstructionTranslatorBase.run")] + [rdd]
    assert all(g.nodes[n]["param_path"] for n in path)
    assert all(g.edges[a, b]["param_path"] for a, b in itertools.pairwise(path))
    assert not g.nodes[by_name["CheckFunctionManager.__init__"]]["param_path"]
    assert not g.edges[rdd, by_name["InstructionTranslatorBase.run"]]["param_path"]  # the recursion back
    assert g.nodes[by_name["_compile"]]["inclusive_s"] == pytest.approx(cg.total_s)
    assert g.nodes[rdd]["inclusive_s"] == pytest.approx(0.84) and g.nodes[rdd]["calls"] is None
    text = rcg.callgraph_dot(cg)
    assert dot_counts(text) == (g.number_of_nodes(), g.number_of_edges())
    rdd_line = next(ln for ln in text.splitlines() if "resolve_data_descriptor" in ln and "label=" in ln)
    assert f'color="{rcg.PARAM_COLOR}"' in rdd_line and "penwidth=5.000" in rdd_line


def test_collapse_by_module() -> None:
    g = cgm.graph_from_pstats(small_table(), collapse=True)
    node = g.nodes["torch._dynamo.variables.builder"]
    assert node["members"] == 2 and node["self_s"] == pytest.approx(0.25)
    assert node["inclusive_s"] == pytest.approx(0.3) and node["calls"] == 100
    assert func_label(BCALL) not in g and "torch._dynamo.symbolic_convert" in g
    assert g.edges["torch._dynamo.symbolic_convert", "torch._dynamo.variables.builder"]["calls"] == 100
    assert not any(u == v for u, v in g.edges)
    assert func_label(TINY) in g  # not torch: stays a function
    samples = cgm.graph_from_samples(seed_session(), collapse=True, user_calls=False)
    assert samples.nodes["torch._dynamo.convert_frame"]["inclusive_s"] == pytest.approx(1.2)
    assert samples.nodes["torch._dynamo.variables.user_defined"]["parametrization"]
    assert cgm.torch_module(BU) == "torch._dynamo.variables.builder"
    assert cgm.torch_module(P + "torch/_dynamo/__init__.py") == "torch._dynamo"
    assert cgm.torch_module("/src/pytorch/torch/fx/graph.py") == "torch.fx.graph"
    assert cgm.torch_module("/work/repro.py") is None and cgm.torch_module("~") is None


def test_goldens_pstats() -> None:
    s = seed_session()
    cg = cgm.build_callgraph(s, small_table())
    assert cg is not None
    check_golden("callgraph_pstats.dot", rcg.callgraph_dot(cg, "dynaprof call graph: repro.py (run)"))
    cgc = cgm.build_callgraph(s, small_table(), collapse_torch=True)
    assert cgc is not None
    check_golden("callgraph_collapsed.dot", rcg.callgraph_dot(cgc, "dynaprof call graph: repro.py (run)"))


HOSTILE = 'evil "q" \\ <b>&amp; {x|y}\nsecond\\nline\r\t\x00 \udcff end'


def test_hostile_names_are_escaped() -> None:
    table = {
        ('/work/we"ird\\dir/<x>&{a|b}.py', 7, HOSTILE): (1, 1, 1.0, 1.0, {}),
        ("/work/ok.py", 1, "callee"): (1, 1, 0.5, 0.5, {('/work/we"ird\\dir/<x>&{a|b}.py', 7, HOSTILE): e(1, 0.5)}),
    }
    cg = cgm.build_callgraph(None, table)
    assert cg is not None
    text = rcg.callgraph_dot(cg, 'title "with" \\ quotes')
    for line in text.splitlines():
        # outside escapes, quotes balance on every line: no string ever spills onto the next
        assert line.replace("\\\\", "").replace('\\"', "").count('"') % 2 == 0, line
    assert '\\"q\\"' in text and "&amp;amp;" in text and "\\\\nline" in text and "\\\\ " in text
    assert "\x00" not in text and "\r" not in text and "\t" not in text and "\udcff" not in text
    assert dot_counts(text) == (2, 1)
    if shutil.which("dot"):
        svg, why = rcg.dot_to_svg(text)
        assert svg is not None, why
        assert "&amp;lt;b&gt;" not in svg and "&lt;b&gt;&amp;amp;" in svg  # shows literally: <b>&amp;
        assert "<script" not in svg


def test_dot_escape_rules() -> None:
    assert rcg.dot_escape('a"b') == 'a\\"b'
    assert rcg.dot_escape("a\\b") == "a\\\\b"
    assert rcg.dot_escape("a&b") == "a&amp;b"
    assert rcg.dot_escape("a\nb") == "a\\\\nb"
    assert rcg.dot_string("one", "two") == '"one\\ntwo"'


def test_render_callgraph_writes_dot_and_svg_or_note(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ctx = RenderContext(seed_session(), cprofile={"run": small_table()})
    if shutil.which("dot"):
        files = rcg.render_callgraph(ctx)
        assert set(files) == {"callgraph.dot", "callgraph.svg"}
        assert "<svg" in str(files["callgraph.svg"]) and ctx.notes == []
        svg = rcg.callgraph_svg_for(ctx)
        assert svg is not None and svg.startswith("<svg")
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here
    ctx = RenderContext(seed_session(), cprofile={"run": small_table()})
    files = rcg.render_callgraph(ctx)
    assert set(files) == {"callgraph.dot"}
    assert len(ctx.notes) == 1 and "apt-get install graphviz" in ctx.notes[0] and "callgraph.dot" in ctx.notes[0]
    assert rcg.callgraph_svg_for(ctx) is None and len(ctx.notes) == 2
    ctx = RenderContext(seed_session(), use_dot=False)
    assert set(rcg.render_callgraph(ctx)) == {"callgraph.dot"} and ctx.notes == []


def test_render_nothing_without_data_and_deterministic() -> None:
    assert rcg.render_callgraph(RenderContext(seed_session(with_samples=False), use_dot=False)) == {}
    assert rcg.render_snakeviz_profile(RenderContext(seed_session())) == {}
    a = rcg.render_callgraph(RenderContext(seed_session(), RenderOptions(collapse_torch=True), use_dot=False))
    b = rcg.render_callgraph(RenderContext(seed_session(), RenderOptions(collapse_torch=True), use_dot=False))
    assert a == b and a


def test_snakeviz_profile_renderer() -> None:
    import marshal

    files = rcg.render_snakeviz_profile(RenderContext(seed_session(), cprofile={"run": small_table()}))
    data = files["cprofile/run.snakeviz.prof"]
    assert isinstance(data, bytes)
    table = marshal.loads(data)
    assert COMP in table and table[COMP][4] == {}
    assert RUN not in table[INL][4] if INL in table else True


def test_thresholds_from_options() -> None:
    opts = RenderOptions(node_threshold=0.2, edge_threshold=0.2)
    ctx = RenderContext(seed_session(), opts, cprofile={"run": small_table()})
    cg = rcg.callgraph_for(ctx)
    assert cg is not None
    assert all(cg.graph.nodes[n]["inclusive_s"] >= 0.2 * cg.total_s for n in cg.graph)
    assert "thresholds 20%/20%" in rcg.callgraph_dot(cg)


def test_function_category_is_the_flamegraph_colour_of_the_function() -> None:
    assert cgm.function_category(FunctionRef("f", GU, 1)) == "guard_building"
    assert cgm.function_category(FunctionRef("f", P + "torch/_inductor/codecache.py", 1)) == "kernel_compile"
    assert cgm.function_category(FunctionRef("f", P + "torch/_inductor/cpu_vec_isa.py", 1)) == "toolchain_setup"
    assert (
        cgm.function_category(FunctionRef("Linear.weight", P + "torch/nn/utils/parametrize.py", 1, "property"))
        == "parametrization"
    )
    assert cgm.function_category(FunctionRef("forward", "/work/repro.py", 1, "traced")) == "dynamo_tracing"
    assert cgm.function_category(FunctionRef("<built-in method builtins.isinstance>", "~", 0)) == "other"


def test_heat_colors() -> None:
    # greys: no category or phase of any picture is grey, so a colour means one thing everywhere
    assert rcg.heat_color(1.0) == "#202020"
    assert rcg.heat_color(0.0) == "#f7f7f7"
    assert rcg.heat_color(-1) == rcg.heat_color(0.0) and rcg.heat_color(2) == rcg.heat_color(1.0)
    for w in (0.0, 0.3, 0.6, 1.0):
        r, g, b = (int(rcg.heat_color(w)[i : i + 2], 16) for i in (1, 3, 5))
        assert r == g == b
    assert rcg.text_color("#ffff00") == "#000000" and rcg.text_color("#0d0d73") == "#ffffff"


def test_outlines_are_the_flamegraph_category_colours() -> None:
    from dynaprof.render.colours import CATEGORY_HSL, category_hex

    for cat in CATEGORY_HSL:
        assert rcg.CATEGORY_OUTLINE[cat] == category_hex(cat)
    cg = cgm.build_callgraph(seed_session(), None)
    assert cg is not None
    text = rcg.callgraph_dot(cg)
    guard = next(ln for ln in text.splitlines() if "CheckFunctionManager" in ln and "label=" in ln)
    assert f'color="{category_hex("guard_building")}"' in guard


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot not installed")
def test_goldens_render_with_dot() -> None:
    for name in ("callgraph_pstats.dot", "callgraph_samples.dot", "callgraph_collapsed.dot"):
        path = GOLDEN / name
        if path.exists():
            out = subprocess.run(["dot", "-Tsvg", str(path)], capture_output=True, timeout=60, check=False)
            assert out.returncode == 0, out.stderr


def _looped_sums(s: Any, collapse: bool) -> tuple[dict[str, float], dict[str, float], dict[tuple[str, str], float]]:
    """The sampled graph's seconds by a plain loop over the stacks, in stack order (what the
    numpy sums must equal to the last bit)."""
    g = cgm.graph_from_samples(s, collapse=collapse, user_calls=False)  # for the node names only
    name_of = {}
    for f_index, f in enumerate(s.functions):
        node = cgm._grouper(collapse)(f.filename, f.name, f.lineno)[0]
        name_of[f_index] = node
    inclusive: dict[str, float] = {}
    self_s: dict[str, float] = {}
    edges: dict[tuple[str, str], float] = {}
    for st in s.samples.stacks:
        path = [name_of[i] for i in st.compiler]
        if collapse:
            path = [n for n, prev in zip(path, [None, *path], strict=False) if n != prev]
        if not path:
            continue
        for n in set(path):
            inclusive[n] = inclusive.get(n, 0.0) + st.seconds
        self_s[path[-1]] = self_s.get(path[-1], 0.0) + st.seconds
        for e in set(itertools.pairwise(path)):
            if e[0] != e[1]:
                edges[e] = edges.get(e, 0.0) + st.seconds
    assert set(inclusive) == set(g.nodes)
    return inclusive, self_s, edges


@pytest.mark.parametrize("collapse", [False, True])
def test_sampled_sums_equal_a_loop_over_the_stacks_to_the_last_bit(collapse: bool) -> None:
    import random

    from dynaprof.model.session import Stack
    from tests.factories import frame, make_session

    rng = random.Random(7)
    files = [CF, SC, UD, FN, BU, GU]
    fns = [FunctionRef(f"f{i}", files[i % len(files)], 10 + i, "python") for i in range(40)]
    stacks = []
    for k in range(3000):  # recursion (repeated functions), empty stacks, uneven seconds
        comp = [rng.randrange(len(fns)) for _ in range(rng.randint(0, 30))]
        stacks.append(Stack("0/0", 0, 1, comp, [], 1, rng.random() / (1 + k % 7)))
    s = make_session([frame("0/0")], stacks, fns)
    g = cgm.graph_from_samples(s, collapse=collapse, user_calls=False)
    inclusive, self_s, edges = _looped_sums(s, collapse)
    assert {n: g.nodes[n]["inclusive_s"] for n in g} == inclusive
    assert {n: g.nodes[n]["self_s"] for n in g if g.nodes[n]["self_s"]} == self_s
    assert {(u, v): d["seconds"] for u, v, d in g.edges(data=True)} == edges
