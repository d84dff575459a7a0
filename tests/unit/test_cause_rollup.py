"""The cause table explains the compile: small causes roll up along the user's code (a file's
lines, then a package's files) instead of vanishing into "other causes"."""

from __future__ import annotations

from dynaprof.analysis.cause_table import CAUSE_ROWS, OTHER_CAUSES, cause_table
from dynaprof.analysis.rollup import package_of
from dynaprof.model.session import Axes, Session

SP = "/venv/lib/python3.11/site-packages/"


def _tail(n: int = 150) -> tuple[Axes, dict[str, str]]:
    """``n`` causes of under 1% each, spread over 6 files of 2 packages, beside one big cause."""
    causes: dict[str, float] = {"parametrization": 30.0}
    files: dict[str, str] = {}
    for i in range(n):
        pkg = "transformers/models/mixtral" if i % 2 else "peft/tuners/lora"
        path = f"{SP}{pkg}/mod{i % 6}.py"
        label = f"forward (mod{i % 6}.py:{i})"
        causes[label] = 0.45 + 0.001 * i
        files[label] = path
    matrix = {"dynamo_tracing": dict(causes)}
    return Axes(causes, matrix), files


def test_150_small_causes_leave_under_15_percent_in_other_causes() -> None:
    ax, files = _tail()
    total = sum(ax.causes.values())
    t = cause_table(ax, total, max_rows=8, files=files)
    assert t is not None and len(t.rows) <= 9  # 8 rows and "other causes"
    other = sum(r.total for r in t.rows if r.cause == OTHER_CAUSES)
    assert other / total < 0.15, [(r.cause, r.total) for r in t.rows]
    rolled = [r for r in t.rows if r.members]
    assert rolled and all(r.cause.endswith("lines") for r in rolled)
    assert all(abs(sum(m.seconds for m in r.members) - r.total) < 1e-9 for r in rolled)
    # every second once: rows and the fold add up to the table's total
    assert abs(sum(r.total for r in t.rows) - total) < 1e-9
    assert sum(len(r.members) for r in rolled) + sum(r.merged for r in t.rows) + (len(t.rows) - len(rolled)
                                                                                  - (1 if other else 0)) == 151
    # without files there is nothing to roll up along: the old fold
    plain = cause_table(ax, total, max_rows=8)
    assert plain is not None and sum(r.total for r in plain.rows if r.cause == OTHER_CAUSES) / total > 0.5


def test_a_package_is_named_as_it_is_imported() -> None:
    assert package_of(SP + "transformers/models/mixtral/modeling_mixtral.py") == "transformers.models.mixtral"
    assert package_of("/home/me/proj/model.py") == "proj"


def test_a_big_cause_keeps_its_own_row() -> None:
    ax, files = _tail(20)
    t = cause_table(ax, None, max_rows=8, files=files)
    assert t is not None and t.rows[0].cause == "parametrization" and not t.rows[0].members


def test_each_cause_s_file_comes_from_its_label_and_the_function_table() -> None:
    from dynaprof.analysis.cause_table import cause_files
    from dynaprof.model.session import FunctionRef
    from tests.factories import make_session

    s = make_session([])
    s.functions = [FunctionRef("MixtralAttention.forward", SP + "transformers/models/mixtral/modeling_mixtral.py", 280,
                               "traced")]
    s.axes = Axes({"forward (modeling_mixtral.py:288)": 1.0, "whole graph": 1.0, "f (nowhere.py:3)": 1.0}, {})
    path = SP + "transformers/models/mixtral/modeling_mixtral.py"
    assert cause_files(s) == {"forward (modeling_mixtral.py:288)": path}


def test_lines_roll_up_by_function_then_class_before_the_file() -> None:
    from dynaprof.analysis.rollup import roll_up

    path = SP + "transformers/models/mixtral/modeling_mixtral.py"
    seconds = {"parametrization": 10.0, "MixtralModel.forward (modeling_mixtral.py:400)": 5.0}
    files = {"MixtralModel.forward (modeling_mixtral.py:400)": path}
    for i in range(3):  # three lines of one function: one row of that function
        seconds[f"MixtralAttention.forward (modeling_mixtral.py:{290 + i})"] = 0.3
    for name in ("MixtralMLP.forward", "MixtralMLP.act"):  # two methods of one class
        seconds[f"{name} (modeling_mixtral.py:50)"] = 0.2
    files |= {c: path for c in seconds if c != "parametrization"}
    rows, rest = roll_up(seconds, files, 4)
    labels = [r.label for r in rows]
    assert labels == ["parametrization", "MixtralModel.forward (modeling_mixtral.py:400)",
                      "MixtralAttention.forward (modeling_mixtral.py): 3 lines",
                      "MixtralMLP (modeling_mixtral.py): 2 lines"]
    assert rest == [] and sum(r.seconds for r in rows) == sum(seconds.values())
    # one row fewer: the rolled rows rise to the file, and say that the file's big line has a row of its own
    rows, rest = roll_up(seconds, files, 3)
    assert [r.label for r in rows][2] == "modeling_mixtral.py: 5 more lines" and rest == []


def test_a_resume_function_rolls_up_with_the_function_it_resumes() -> None:
    from dynaprof.analysis.rollup import ancestors

    path = "/proj/model.py"
    resumed = ancestors("forward after the graph break (model.py:40)", path)
    assert resumed[0] == ancestors("forward (model.py:12)", path)[0]
    assert ancestors("whole graph", None) == []


def test_two_files_of_one_name_are_told_apart_by_the_function() -> None:
    """peft's ``layer.py`` and the ``kernels`` package's ``layer.py``: a cause of peft's never rolls
    up into ``kernels``; one that cannot be told apart gets no file rather than a wrong one."""
    from dynaprof.analysis.cause_table import cause_files
    from dynaprof.model.session import FunctionRef
    from tests.factories import make_session

    peft, kernels = SP + "peft/tuners/lora/layer.py", SP + "kernels/_internals/layer/layer.py"
    s = make_session([], functions=[FunctionRef("CompileableContextVar.get", kernels, 495, "traced"),
                                    FunctionRef("ParamWrapper.get_delta_factors", peft, 2525, "traced"),
                                    FunctionRef("forward", peft, 10, "traced"),
                                    FunctionRef("forward", kernels, 9, "traced")])
    s.axes = Axes({"ParamWrapper.get_delta_factors (layer.py:2530)": 1.0,
                   "CompileableContextVar.get (layer.py:496)": 1.0, "forward (layer.py:12)": 1.0}, {})
    assert cause_files(s) == {"ParamWrapper.get_delta_factors (layer.py:2530)": peft,
                              "CompileableContextVar.get (layer.py:496)": kernels}


def test_compare_rolls_causes_up_as_the_table_does() -> None:
    """``compare`` lists the rows the cause table shows: 150 small causes are a few rolled-up
    rows whose seconds add up to the members', not 150 lines or one "other causes"."""
    from dynaprof.analysis.compare import compare_sessions
    from dynaprof.model.session import FunctionRef
    from tests.factories import make_session

    ax, files = _tail()

    def side(scale: float, functions: bool) -> Session:
        refs = [FunctionRef("forward", p, 1, "traced") for p in sorted(set(files.values()))] if functions else []
        s = make_session([], functions=refs)
        s.axes = Axes({c: v * scale for c, v in ax.causes.items()},
                      {"dynamo_tracing": {c: v * scale for c, v in ax.causes.items()}})
        return s

    growth = sum(ax.causes.values())
    cmp = compare_sessions(side(1.0, True), side(2.0, True))
    assert cmp.causes is not None and len(cmp.causes) <= CAUSE_ROWS + 1
    assert any(k.endswith("lines") for k in cmp.causes)
    assert abs(sum(c.delta or 0.0 for c in cmp.causes.values()) - growth) < 1e-6
    assert (cmp.causes[OTHER_CAUSES].delta or 0.0) / growth < 0.15 if OTHER_CAUSES in cmp.causes else True
    # without the files there is nothing to roll along: the small causes are one "other causes"
    plain = compare_sessions(side(1.0, False), side(2.0, False))
    assert plain.causes is not None and (plain.causes[OTHER_CAUSES].delta or 0.0) / growth > 0.5


def test_the_suite_names_a_models_hottest_cause_as_its_table_rolls_it_up() -> None:
    """A model whose time is 150 small user lines: its hottest cause in the suite is a rolled-up
    row (a package's), not the biggest single line, as its own first screen shows."""
    from dynaprof.analysis.suite_facts import model_summary, rolled_causes
    from dynaprof.model.session import FunctionRef
    from dynaprof.model.suite import SuiteRun
    from tests.factories import frame, make_session

    ax, files = _tail()
    ax.causes["parametrization"] = 3.0  # now smaller than the two packages' rows
    ax.matrix["dynamo_tracing"]["parametrization"] = 3.0
    s = make_session([frame("0/0", compile_time_s=sum(ax.causes.values()))],
                     functions=[FunctionRef("forward", p, 1, "traced") for p in sorted(set(files.values()))])
    s.axes = ax
    rows = rolled_causes(s)
    assert len(rows) <= CAUSE_ROWS and OTHER_CAUSES not in rows
    biggest_line = max(v for k, v in ax.causes.items() if k.startswith("forward"))
    run = SuiteRun("m", 1, "m/1", 0, measures={"total": 70.0, "cause:forward (mod5.py:149)": biggest_line},
                   causes=rows)
    hottest = model_summary("m", [run]).hottest_cause
    assert hottest is not None and hottest[1] > 10 * biggest_line and hottest == max(rows.items(), key=lambda kv: kv[1])
