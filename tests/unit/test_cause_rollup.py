"""The cause table explains the compile: small causes roll up along the user's code (a file's
lines, then a package's files) instead of vanishing into "other causes"."""

from __future__ import annotations

from dynaprof.analysis.cause_table import OTHER_CAUSES, cause_table, package_of
from dynaprof.model.session import Axes

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
    assert sum(len(r.members) for r in rolled) + sum(r.folded for r in t.rows) + (len(t.rows) - len(rolled)
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
