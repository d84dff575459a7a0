"""Dynamo's interpreter replaced by user calls in the compiler pictures (analysis/interpreter_frames.py),
measured on a real session of the seed case (samples/parametrized_linear.py, 32 parametrized Linear layers, torch
2.13, eager backend): levels, frames, hidden time, call graph size, and the exports unfolded."""

from __future__ import annotations

import gzip
import re
import xml.etree.ElementTree as ET
from functools import cache

import pytest

from dynaprof.analysis.callgraph import build_callgraph
from dynaprof.analysis.derived import Derived
from dynaprof.analysis.interpreter_frames import (
    INLINED_KIND,
    INLINED_PROPERTY_KIND,
    UNKNOWN_CALL,
    user_call_path,
    user_call_paths,
)
from dynaprof.analysis.pruned_tree import GATHERED_PREFIX, build_pruned_tree
from dynaprof.analysis.stacks import build_tree
from dynaprof.model import Session, Stack
from dynaprof.model.store import session_from_text
from dynaprof.render.base import RenderContext, RenderOptions
from dynaprof.render.callgraph import callgraph_dot
from dynaprof.render.flamegraph import flamegraph_svg
from dynaprof.render.folded import render_folded
from tests.factories import DYN, SP, FunctionTable, frame, make_session
from tests.helpers import TESTS_DIR

SEED = TESTS_DIR / "data" / "sessions" / "seed_parametrized_linear.json.gz"
SC = DYN + "symbolic_convert.py"
NS = "{http://www.w3.org/2000/svg}"


@cache
def seed() -> Session:
    return session_from_text(gzip.decompress(SEED.read_bytes()).decode("utf-8"), str(SEED))


def _levels(svg: str) -> int:
    """The rows the frames of an SVG flamegraph occupy."""
    root = ET.fromstring(svg)
    return len({r.get("y") for g in root.iter(f"{NS}g") for r in g.findall(f"{NS}rect") if g.find(f"{NS}title")
                is not None})


def _names(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return [(g.findtext(f"{NS}title") or "").split("\n")[0] for g in root.iter(f"{NS}g")
            if g.find(f"{NS}title") is not None]


# ---------------------------------------------------------------------------------------------
# the rule


def _table() -> tuple[FunctionTable, dict[str, int]]:
    t = FunctionTable()
    ids = {
        "compile": t("_compile", DYN + "convert_frame.py", 1),
        "run": t("InstructionTranslatorBase.run", SC, 1943),
        "step": t("InstructionTranslatorBase.step", SC, 1556),
        "CALL": t("InstructionTranslatorBase.CALL", SC, 4515),
        "ufv": t("UserFunctionVariable.call_function", DYN + "variables/functions.py", 763),
        "inline": t("InliningInstructionTranslator.inline_call_", SC, 5953),
        "rdd": t("UserDefinedObjectVariable.resolve_data_descriptor", DYN + "variables/user_defined.py", 3386),
        "build": t("VariableBuilder._wrap", DYN + "variables/builder.py", 1034),
        "imp": t("_find_and_load", "<frozen importlib._bootstrap>", 1),
        "fwd": t("Model.forward", "/work/model.py", 5, "traced"),
        "lin": t("Linear.forward", SP + "torch/nn/modules/linear.py", 130, "traced"),
        "prop": t("Linear.weight", SP + "torch/nn/utils/parametrize.py", 419, "property"),
        "get": t("get_parametrized", SP + "torch/nn/utils/parametrize.py", 419, "traced"),
    }
    return t, ids


def _fold(t: FunctionTable, compiler: list[int], traced: list[int]) -> list[tuple[str, str]]:
    s = make_session([frame()], [Stack("0/0", 0, 0, compiler, traced, 1, 0.01)], t.functions)
    fs = user_call_paths(s)
    return [(fs.keys[i][0], fs.keys[i][3]) for i in fs.paths[0]]


def test_each_inlined_call_becomes_one_frame_named_for_the_user_function() -> None:
    t, i = _table()
    chain = [i["run"], i["step"], i["CALL"], i["ufv"], i["inline"]]  # one inlined call, ~10 frames in torch
    compiler = [i["compile"], *chain, i["run"], i["step"], i["rdd"], i["ufv"], i["inline"], i["run"], i["step"],
                i["CALL"], i["build"], i["imp"], i["build"]]
    traced = [i["fwd"], i["lin"], i["prop"], i["get"]]
    assert _fold(t, compiler, traced) == [
        ("_compile", "python"),
        ("Model.forward", INLINED_KIND),
        ("Linear.forward", INLINED_KIND),
        ("Linear.weight", INLINED_PROPERTY_KIND),  # the @property Dynamo resolved, after its caller
        ("get_parametrized", INLINED_KIND),
        # the last chain: its interpreter frames go, the frames doing the work stay
        ("VariableBuilder._wrap", "python"),
        ("VariableBuilder._wrap", "python"),  # the import machinery between them is left out
    ]


def test_runs_and_traced_entries_that_do_not_pair() -> None:
    t, i = _table()
    # a run without a traced entry (no hooks): [inlined call]
    assert _fold(t, [i["compile"], i["run"], i["step"], i["build"]], []) == [
        ("_compile", "python"), (UNKNOWN_CALL, INLINED_KIND), ("VariableBuilder._wrap", "python")]
    # a traced entry pushed before its run started: it follows the last one
    assert _fold(t, [i["compile"], i["run"], i["step"]], [i["fwd"], i["lin"]]) == [
        ("_compile", "python"), ("Model.forward", INLINED_KIND), ("Linear.forward", INLINED_KIND)]
    # no translator on the stack (guards, AOT, Inductor): unchanged but for pass-through frames
    assert _fold(t, [i["compile"], i["imp"], i["build"]], [i["fwd"]]) == [
        ("_compile", "python"), ("VariableBuilder._wrap", "python")]
    runs = [False] * 3
    assert user_call_path([0, 1, 2], [], t.functions, runs, runs, runs, {}, -1) == (0, 1, 2)


# ---------------------------------------------------------------------------------------------
# the seed case


def test_seed_compiler_flamegraph_is_shallow_and_hides_little() -> None:
    s = seed()
    d = Derived(s)
    raw = build_tree(s, "compiler", derived=d)
    assert raw.depth() + 1 > 100  # Dynamo's recursion: 132 levels unfolded
    tree, _pruned, hidden_s = build_pruned_tree(s, "compiler", None, 0.001, derived=d, user_calls=True, gather=True)
    assert tree.depth() + 1 <= 45  # 42 on this session
    assert hidden_s <= 0.05 * tree.seconds  # 4.4%: pruning hides at most 5% of the time
    assert tree.seconds == pytest.approx(raw.seconds)  # folding moves no time
    svg = flamegraph_svg(s, "compiler", options=RenderOptions(), derived=d)
    assert _levels(svg) <= 45
    names = _names(svg)
    # no interpreter loop left: it is the folded frames (an inline being set up at the leaf may stay)
    assert "InstructionTranslatorBase.run" not in names and "InstructionTranslatorBase.step" not in names
    assert {"Module.forward", "Sequential.forward", "Linear.forward", "Linear.weight (property)"} <= set(names)
    assert any(n.startswith(GATHERED_PREFIX) for n in names)  # narrow callees gathered, not gaps
    hidden = re.search(r"pruned \([^)]*, ([\d.]+)% of the total\)", svg)
    assert hidden is not None and float(hidden.group(1)) <= 5.0  # the subtitle says what is hidden


def test_seed_exports_keep_the_real_stacks() -> None:
    files = render_folded(RenderContext(seed(), RenderOptions(exports="plain")))
    text = files["stacks-compiler.folded"]
    assert isinstance(text, str)
    assert "InstructionTranslatorBase.run (torch/_dynamo/symbolic_convert.py:1943)" in text
    assert max(line.count(";") for line in text.splitlines()) + 1 > 100


def test_seed_call_graph_is_small_and_folded() -> None:
    s = seed()
    cg = build_callgraph(s, None, max_nodes=RenderOptions().max_graph_nodes)
    assert cg is not None
    g = cg.graph
    assert g.number_of_nodes() <= 40
    names = {g.nodes[n]["name"] for n in g}
    assert "InstructionTranslatorBase.run" not in names and "Module.forward" in names
    dot = callgraph_dot(cg)
    assert "showing 40 of" in dot and "capped at the 40 heaviest nodes" in dot
    assert len(re.findall(r'^  "n\d+" \[', dot, re.M)) <= 40


def test_a_wrapped_compiled_frame_is_named_for_the_model_code() -> None:
    from dynaprof.model.session import Location

    t, i = _table()
    inner = t("wrap_inline.<locals>.inner", SP + "torch/_dynamo/external_utils.py", 67, "traced")
    compiler = [i["compile"], i["run"], i["step"], i["CALL"], i["inline"], i["run"], i["step"], i["build"]]
    f = frame(name="inner", filename=SP + "torch/_dynamo/external_utils.py", lineno=67,
              wrapped=Location("Model.forward", "/work/model.py", 5))
    s = make_session([f], [Stack("0/0", 0, 0, compiler, [inner, i["lin"]], 1, 0.01)], t.functions)
    fs = user_call_paths(s)
    assert [(fs.keys[j][0], fs.keys[j][1]) for j in fs.paths[0]][1:3] == [
        ("Model.forward", "/work/model.py"), ("Linear.forward", SP + "torch/nn/modules/linear.py")]
    # without the fact, torch's name stays
    plain = make_session([frame()], [Stack("0/0", 0, 0, compiler, [inner, i["lin"]], 1, 0.01)], t.functions)
    fp = user_call_paths(plain)
    assert fp.keys[fp.paths[0][1]][0] == "wrap_inline.<locals>.inner"
