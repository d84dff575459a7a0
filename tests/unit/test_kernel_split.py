"""A kernel's build goes to its owner: one side's kernel to that side, a kernel that fuses a
parametrization's nodes into user code split by what its nodes add to the kernel's size, with the
fixed cost left to the code that would build the kernel anyway. Labels never nest."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dynaprof.capture import node_causes
from dynaprof.ingest.kernel_split import (
    BaseCost,
    fit_base,
    in_process_seconds,
    param_fraction,
    split_kernels,
)
from dynaprof.ingest.kernel_waits import UNKNOWN_CAUSE, KernelWait
from dynaprof.model.journal import KERNEL_CAUSE
from dynaprof.model.session import CompiledFrame, FunctionRef, Stack
from tests.factories import kernel

PARAM = ("Conv1d.weight via _WeightNorm", "/m.py", 3, node_causes.CAUSE_PARAMETRIZATION)
USER = ("forward (m.py:9)", "/m.py", 9, node_causes.CAUSE_USER)
OTHER = ("forward (m.py:12)", "/m.py", 12, node_causes.CAUSE_USER)


def test_a_fused_kernel_has_two_parts_and_the_parametrization_s_names_its_partner() -> None:
    param, rest = node_causes.split_parts([PARAM] * 5 + [USER] * 3)
    assert rest == USER
    assert param is not None and param[3] == node_causes.CAUSE_PARAMETRIZATION
    assert param[0] == "Conv1d.weight via _WeightNorm, fused with forward (m.py:9)"
    # the partner with the most nodes is named, the others counted: never a nested label
    param, rest = node_causes.split_parts([PARAM, USER, OTHER, OTHER])
    assert param is not None and param[0].endswith("fused with forward (m.py:12) and 1 more")
    assert rest == OTHER  # the user line with the most nodes, never a list


def test_a_kernel_of_one_side_has_one_part() -> None:
    assert node_causes.split_parts([PARAM, PARAM]) == (PARAM, None)
    assert node_causes.split_parts([USER, node_causes.UNKNOWN]) == (None, USER)
    # nodes without provenance beside a parametrization's add nothing: the kernel is its
    assert node_causes.split_parts([PARAM, node_causes.UNKNOWN]) == (PARAM, None)
    assert node_causes.split_parts([]) == (None, None)


def test_the_cost_line_is_robust_and_never_negative() -> None:
    # 0.8 s fixed and 0.1 s a node, one kernel slowed down by a busy machine
    pts = [(1, 0.9), (3, 1.1), (5, 1.3), (7, 1.5), (9, 9.0)]
    base = fit_base(pts)
    assert base is not None and base.s == pytest.approx(0.1) and base.a == pytest.approx(0.8)
    falling = fit_base([(1, 2.0), (9, 1.0)])
    assert falling is not None and falling.s == 0.0 and falling.a > 0
    assert fit_base([(4, 1.0), (4, 1.2)]) is None  # one node count: no line
    assert fit_base([(1, 0.0), (2, 0.0)]) is None  # nothing measured


def test_the_parametrization_gets_its_nodes_share_of_the_size_dependent_cost() -> None:
    fused = kernel("0/0", 7, "k", 8, 5, 1, 2)
    assert param_fraction(fused, BaseCost(0.8, 0.1)) == pytest.approx(0.5 / 1.6)
    assert param_fraction(fused, BaseCost(1.0, 0.0)) == 0.0  # all fixed cost: the kernel exists anyway
    assert param_fraction(fused, None) == pytest.approx(5 / 8)  # nothing to fit: by node count
    assert param_fraction(kernel("0/0", 7, "k", 5, 5, 1, -1), BaseCost(1.0, 0.0)) == 1.0
    assert param_fraction(kernel("0/0", 7, "k", 3, 0, -1, 2), BaseCost(1.0, 0.5)) == 0.0


def _functions() -> list[FunctionRef]:
    return [
        FunctionRef("CppCodeCache.load_async", "/torch/_inductor/codecache.py", 1, "python"),
        FunctionRef("Conv1d.weight via _WeightNorm, fused with forward (m.py:9)", "/m.py", 3, "cause:parametrization"),
        FunctionRef("forward (m.py:9)", "/m.py", 9, "cause:user"),
        FunctionRef("Conv1d.weight via _WeightNorm", "/m.py", 3, "cause:parametrization"),
        FunctionRef("k_fused", "0/0", 0, KERNEL_CAUSE),
        FunctionRef("k_user", "0/0", 1, KERNEL_CAUSE),
        FunctionRef("k_param", "0/0", 2, KERNEL_CAUSE),
        FunctionRef("pick_vec_isa", "/torch/_inductor/cpu_vec_isa.py", 5, "python"),
        FunctionRef("k_none", "0/0", 3, KERNEL_CAUSE),
    ]


def _frame() -> CompiledFrame:
    return CompiledFrame("0/0", "0/0", "0/0", 0, "forward", "/m.py", 9, 1, "MainThread", 0.0, 10.0)


def test_each_kernel_s_samples_go_to_its_owner_or_are_split() -> None:
    fns = _functions()
    kernels = [kernel("0/0", 4, "k_fused", 8, 5, 1, 2), kernel("0/0", 5, "k_user", 3, 0, -1, 2),
               kernel("0/0", 6, "k_param", 5, 5, 3, -1), kernel("0/0", 8, "k_none", 0, 0, -1, -1)]
    # builds: 0.8 s fixed and 0.1 s a node (k_user 1.1 s in process, the others by a worker)
    stacks = [Stack("0/0", 0, 1, [0], [], 110, 1.1, [], 5),
              Stack("0/0", 0, 1, [0, 7], [], 500, 5.0, [], 5),  # toolchain setup: not the kernel's own
              Stack("0/0", 0, 1, [0], [], 160, 1.6, [], 4), Stack("0/0", 0, 1, [0], [], 130, 1.3, [], 6),
              Stack("0/0", 0, 1, [0], [], 10, 0.1, [], 8), Stack("0/0", 0, 1, [0], [], 40, 0.4, [], 2)]
    in_process = in_process_seconds(stacks, kernels, fns)
    assert in_process == {5: pytest.approx(1.1), 4: pytest.approx(1.6), 6: pytest.approx(1.3), 8: pytest.approx(0.1)}
    waits = [KernelWait("0/0", 99, 3.0, 0, [(4, 0.0), (6, 0.0)])]  # loaded: nothing measured beyond
    frames = {"0/0": _frame()}
    out = split_kernels(stacks, kernels, waits, in_process, fns, frames)
    by: dict[int, float] = {}
    for st in out:
        by[st.cause] = by.get(st.cause, 0.0) + st.seconds
    assert set(by) == {1, 2, 3, fns.index(UNKNOWN_CAUSE)}  # no kernel cause is left
    # the fused kernel: 0.5 s of its 1.6 s for the parametrization's 5 nodes, the rest is the user's
    assert by[1] == pytest.approx(1.6 * 0.5 / 1.6)
    assert by[2] == pytest.approx(1.1 + 5.0 + 1.6 * 1.1 / 1.6 + 0.4)
    assert by[3] == pytest.approx(1.3)  # made of the parametrization's nodes only: all its
    assert sum(st.samples for st in out) == sum(st.samples for st in stacks)
    assert frames["0/0"].fused_kernels == 1 and frames["0/0"].fused_kernel_s == pytest.approx(1.6)


def test_the_assembler_splits_a_journal_s_kernels() -> None:
    """``kernel`` records, as capture writes them, split their kernels' samples in the session."""
    from dynaprof.model.journal import RECORD_TYPES
    from tests.helpers import journal_with_one_sample

    record = {"t": "kernel", "key": "0/0", "cause": 12, "name": "cpp_fused_0", "nodes": 8, "param_nodes": 5,
              "param": 10, "rest": 11}
    assert set(record) == RECORD_TYPES["kernel"].__required_keys__
    s, causes = journal_with_one_sample([[10, "Linear.weight via P, fused with f (tiny.py:2)", "/w/tiny.py", 3,
                                          "cause:parametrization"],
                                         [11, "f (tiny.py:2)", "/w/tiny.py", 2, "cause:user"],
                                         [12, "cpp_fused_0", "0/0", 0, KERNEL_CAUSE]], record)
    # one kernel: nothing to fit a cost line on, so the split is by node count
    assert causes == {"Linear.weight via P, fused with f (tiny.py:2)": pytest.approx(0.03 * 5 / 8),
                      "f (tiny.py:2)": pytest.approx(0.03 * 3 / 8)}
    assert [f.fused_kernels for f in s.frames if f.key == "0/0"] == [1]


def _replayed(*kernels: set[tuple[str, str, int]], key: str = "0/0") -> Any:
    from dynaprof.ingest.kernel_match import read_replay

    data = {"kernels": [{"key": key, "users": [list(u) for u in k]} for k in kernels], "replayed": [key],
            "graphs": 1, "failed": [], "seconds": 2.5, "pid": 4321}
    return read_replay(json.loads(json.dumps(data)))


F = ("f (tiny.py:2)", "/w/tiny.py", 2)
G = ("g (tiny.py:5)", "/w/tiny.py", 5)
S = 0.01  # each kernel's sampled build (within the fixture frame's compile time)


def _kernel_journal() -> list[dict[str, Any]]:
    """Three kernels of one frame: two fuse a weight norm into ``f`` (Inductor fused it twice over,
    where the plain graph needs one kernel for ``f``), one holds only the weight norm's nodes."""
    from tests.helpers import JOURNAL, TID

    fns = [[10, "Linear.weight via P, fused with f (tiny.py:2)", "/w/tiny.py", 3, "cause:parametrization"],
           [11, "f (tiny.py:2)", "/w/tiny.py", 2, "cause:user"],
           [12, "cpp_fused_0", "0/0", 0, KERNEL_CAUSE], [13, "cpp_fused_1", "0/0", 1, KERNEL_CAUSE],
           [14, "Linear.weight via P", "/w/tiny.py", 3, "cause:parametrization"],
           [15, "cpp_fused_2", "0/0", 2, KERNEL_CAUSE]]
    kernels = [{"t": "kernel", "key": "0/0", "cause": 12, "name": "cpp_fused_0", "nodes": 8, "param_nodes": 5,
                "param": 10, "rest": 11, "users": [11]},
               {"t": "kernel", "key": "0/0", "cause": 13, "name": "cpp_fused_1", "nodes": 8, "param_nodes": 5,
                "param": 10, "rest": 11, "users": [11]},
               {"t": "kernel", "key": "0/0", "cause": 15, "name": "cpp_fused_2", "nodes": 4, "param_nodes": 4,
                "param": 14, "rest": -1, "users": []}]
    stacks = [["0/0", 1, TID, [0], [], 10, S, [], c] for c in (12, 13, 15)]
    return [*JOURNAL[:-1], {"t": "fn", "items": fns}, *kernels, {"t": "stacks", "items": stacks}, JOURNAL[-1]]


def _by_cause(s: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for st in s.samples.stacks:
        name = s.functions[st.cause].name if st.cause >= 0 else "?"
        out[name] = out.get(name, 0.0) + st.seconds
    return out


def test_the_replay_charges_the_parametrization_with_the_kernels_that_exist_only_because_of_it() -> None:
    """A weight norm fused into a user kernel the plain graph also has keeps the split by node; a
    fused kernel the folded graph has no counterpart of, and a kernel of its own nodes only, are
    the parametrization's whole (issue: the parametrization's whole cost on Inductor)."""
    from dynaprof.ingest.assemble import ParentFacts, assemble

    facts = ParentFacts(["tiny.py"], 0)
    alone = _by_cause(assemble(_kernel_journal(), facts))
    s = assemble(_kernel_journal(), facts, replay=_replayed({F}, {G}))
    got = _by_cause(s)
    param = sum(v for k, v in got.items() if k.startswith("Linear.weight via P"))
    # without the replay: the param-only kernel whole; the fused ones cost the same whatever their
    # size (the fitted line is all fixed cost), so f would build them anyway: nothing of them
    assert sum(v for k, v in alone.items() if k.startswith("Linear.weight")) == pytest.approx(S)
    # with it: one fused kernel has f's counterpart, the other has none and is the parametrization's
    assert param == pytest.approx(2 * S)
    assert got["f (tiny.py:2)"] == pytest.approx(S)
    assert s.replay is not None and (s.replay.graphs, s.replay.kernels, s.replay.extra_kernels) == (1, 2, 1)
    assert s.replay.extra_kernel_s == pytest.approx(S) and s.replay.pid == 4321 and s.replay.seconds == 2.5
    # g's kernel only the folded graph defines: spared, priced at the run's mean build
    assert (s.replay.spared_kernels, s.replay.spared_kernel_s) == (1, pytest.approx(S))


def test_a_frame_the_replay_left_with_no_kernel_gives_every_fused_kernel_to_the_parametrization() -> None:
    from dynaprof.ingest.assemble import ParentFacts, assemble

    s = assemble(_kernel_journal(), ParentFacts(["tiny.py"], 0), replay=_replayed())
    got = _by_cause(s)
    assert sum(v for k, v in got.items() if k.startswith("Linear.weight via P")) == pytest.approx(3 * S)
    # a frame not replayed is not compared: the split by node stays
    s = assemble(_kernel_journal(), ParentFacts(["tiny.py"], 0), replay=_replayed(key="1/0"))
    assert sum(v for k, v in _by_cause(s).items() if k.startswith("Linear.weight")) == pytest.approx(S)


def test_a_graph_the_replay_could_not_rebuild_is_a_note() -> None:
    from dynaprof.ingest.assemble import ParentFacts, assemble

    records = [*_kernel_journal()[:-1], {"t": "replay_skipped", "key": "0/0", "reason": "symbolic sizes"},
               _kernel_journal()[-1]]
    s = assemble(records, ParentFacts(["tiny.py"], 0))
    assert s.replay is not None and s.replay.failed == ["0/0: symbolic sizes"] and s.replay.graphs == 0
    assert any("Inductor replay: frame 0/0: symbolic sizes" in w for w in s.capture.warnings)


def test_a_run_without_a_graph_to_replay_starts_no_replay(tmp_path: Any) -> None:
    from dynaprof import pipeline
    from tests.helpers import JOURNAL

    journal = tmp_path / "journal.jsonl"
    journal.write_text("".join(json.dumps(r) + "\n" for r in JOURNAL))
    said: list[str] = []
    assert pipeline._replay(journal, tmp_path, {}, False, said.append) is None
    assert said == [] and sorted(p.name for p in tmp_path.iterdir()) == ["journal.jsonl"]
