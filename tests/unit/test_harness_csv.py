"""PyTorch's dynamo benchmark harness CSVs read in as a suite (``ingest.harness_csv``).

The fixtures in tests/data/harness/ follow the layouts of pytorch/pytorch ``benchmarks/dynamo/common.py``
at 00391a7e1220ab2272e156b0ceb036f74f0b5f94 (``speedup_experiment``, ``output_csv``,
``write_csv_when_exception``) and ``benchmarks/dynamo/runner.py``; README.md there says how each was made.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaprof.analysis.suite_facts import model_summaries
from dynaprof.errors import DynaprofError
from dynaprof.ingest.harness_csv import FAILED_ROW, read_harness_csvs
from dynaprof.model.suite import ORIGIN_HARNESS, Suite, load_suite, save_suite
from dynaprof.model.sweep import TOTAL
from tests.helpers import ROOT_DIR

DATA = ROOT_DIR / "tests" / "data" / "harness"
PERF = DATA / "inductor_torchbench_float32_training_cuda_performance.csv"
METRICS = DATA / "inductor_torchbench_float32_training_cuda_performance_compilation_metrics.csv"
LEGACY = DATA / "legacy_headerless_performance.csv"
#: the header ``speedup_experiment`` writes with the dynamo stats (common.py at 00391a7e)
HEADER = ("dev,name,batch_size,speedup,abs_latency,compilation_latency,compression_ratio,eager_peak_mem,"
          "dynamo_peak_mem,calls_captured,unique_graphs,graph_breaks,unique_graph_breaks,autograd_captures,"
          "autograd_compiles,cudagraph_skips")


def _write(tmp_path: Path, text: str, name: str = "speedup_inductor.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _runs(suite: Suite, name: str) -> list[tuple[int, float | None, str | None]]:
    return [(r.repeat, r.measures.get(TOTAL), r.error) for r in suite.runs_of(name)]


def test_performance_csv_is_a_suite_of_compile_times() -> None:
    suite = read_harness_csvs([PERF])
    assert suite.origin == ORIGIN_HARNESS and suite.entries == [] and suite.repeat == 3
    assert suite.source == str(PERF)
    assert _runs(suite, "BERT_pytorch") == [(1, 41.0046, None), (2, 39.871233, None), (3, 43.120045, None)]
    assert _runs(suite, "resnet50") == [(1, 27.0392, None), (2, None, FAILED_ROW), (3, 28.5017, None)]
    assert _runs(suite, "detectron2_fcos_r_50_fpn") == [(1, None, FAILED_ROW)]
    assert all(r.run_dir == "" and r.kinds == {} and r.counts == {} for r in suite.runs)
    assert [r.exit_status for r in suite.runs_of("resnet50")] == [0, None, 0]
    assert any("compilation_latency" in n for n in suite.notes)


def test_the_rows_other_figures_go_to_harness() -> None:
    bert = read_harness_csvs([PERF]).runs_of("BERT_pytorch")[0]
    assert bert.harness == {
        "abs_latency": 22.2879, "autograd_captures": 0.0, "autograd_compiles": 0.0, "batch_size": 16.0,
        "calls_captured": 545.0, "compression_ratio": 1.1965, "cudagraph_skips": 0.0, "dynamo_peak_mem": 3.443333,
        "eager_peak_mem": 4.12, "graph_breaks": 0.0, "speedup": 2.6028, "unique_graph_breaks": 0.0,
        "unique_graphs": 1.0}
    assert list(bert.harness) == sorted(bert.harness)


def test_a_failed_row_is_an_error_never_a_zero() -> None:
    suite = read_harness_csvs([PERF])
    for r in [*suite.runs_of("detectron2_fcos_r_50_fpn"), suite.runs_of("resnet50")[1]]:
        assert not r.ok and r.error == FAILED_ROW
        assert r.measures == {} and r.harness == {}


def test_model_summaries_of_a_harness_suite() -> None:
    models = {m.name: m for m in model_summaries(read_harness_csvs([PERF]))}
    order = [m.name for m in model_summaries(read_harness_csvs([PERF]))]
    assert order == ["BERT_pytorch", "resnet50", "detectron2_fcos_r_50_fpn"]  # slowest first, no time last
    bert, resnet, fcos = models["BERT_pytorch"], models["resnet50"], models["detectron2_fcos_r_50_fpn"]
    assert (bert.runs, bert.median_s, bert.min_s, bert.max_s, bert.failed) == (3, 41.0046, 39.871233, 43.120045, [])
    assert bert.spread == pytest.approx((43.120045 - 39.871233) / 41.0046)
    assert bert.median_run is not None and bert.median_run.repeat == 1
    assert bert.hottest_cause is None and bert.hottest_phase is None and bert.kinds == {}
    assert resnet.runs == 2 and resnet.median_s == pytest.approx((27.0392 + 28.5017) / 2)
    assert [r.repeat for r in resnet.failed] == [2]
    assert fcos.runs == 0 and fcos.median_s is None and [r.error for r in fcos.failed] == [FAILED_ROW]


def test_the_metrics_csv_beside_it_adds_dynamo_timed_figures_to_the_finished_runs() -> None:
    suite = read_harness_csvs([PERF, METRICS])
    assert _runs(suite, "BERT_pytorch") == _runs(read_harness_csvs([PERF]), "BERT_pytorch")  # same total
    inner = [r.harness.get("dynamo_timed:_compile.compile_inner") for r in suite.runs_of("BERT_pytorch")]
    assert inner == [38.912004, 37.800216, 40.990871]
    resnet = suite.runs_of("resnet50")
    assert [r.harness.get("dynamo_timed:_compile.compile_inner") for r in resnet] == [25.502310, None, 26.870012]
    assert resnet[0].harness["dynamo_timed:compile_fx.<locals>.fw_compiler_base"] == 6.100872
    assert "dynamo_timed:gc" not in resnet[0].harness  # the harness's padding "0"
    assert suite.runs_of("BERT_pytorch")[0].harness["dynamo_timed:gc"] == 0.0  # a real "0.000000"
    assert suite.runs_of("detectron2_fcos_r_50_fpn")[0].harness == {}
    assert any("2 rows with fewer dynamo_timed functions" in n for n in suite.notes)
    assert read_harness_csvs([METRICS, PERF]).runs == suite.runs  # the order given does not pair them


def test_a_metrics_csv_alone_gives_compile_inner_as_its_compile_time() -> None:
    suite = read_harness_csvs([METRICS])
    assert _runs(suite, "BERT_pytorch") == [(1, 38.912004, None), (2, 37.800216, None), (3, 40.990871, None)]
    assert _runs(suite, "resnet50") == [(1, 25.50231, None), (2, 26.870012, None)]
    assert any("_compile.compile_inner" in n and "not compilation_latency" in n for n in suite.notes)
    assert model_summaries(suite)[0].name == "BERT_pytorch"


def test_metrics_rows_without_a_finished_run_are_left_out_with_a_note(tmp_path: Path) -> None:
    perf = _write(tmp_path, f"{HEADER}\ncuda,m,4,1.5,2.0,3.25,1,1,1,1,1,0,0,0,0,0\n", "x.csv")
    _write(tmp_path, "dev,name,batch_size,_compile.compile_inner\ncuda,m,4,3.000000\ncuda,m,4,2.500000\n",
           "x_compilation_metrics.csv")
    suite = read_harness_csvs([perf, tmp_path / "x_compilation_metrics.csv"])
    assert suite.runs[0].harness["dynamo_timed:_compile.compile_inner"] == 3.0
    assert any("1 row without a finished run in x.csv left out: m (1)" in n for n in suite.notes)


def test_a_renamed_metrics_csv_still_pairs(tmp_path: Path) -> None:
    # runner scripts rename them as speedup_inductor_compilation_metrics_huggingface_DATE.csv
    perf = _write(tmp_path, f"{HEADER}\ncuda,m,4,1.5,2.0,3.25,1,1,1,1,1,0,0,0,0,0\n", "speedup_inductor_hf_1.csv")
    metrics = _write(tmp_path, "dev,name,batch_size,_compile.compile_inner\ncuda,m,4,3.000000\n",
                     "speedup_inductor_compilation_metrics_hf_1.csv")
    suite = read_harness_csvs([metrics, perf])
    assert len(suite.runs) == 1 and suite.runs[0].measures == {TOTAL: 3.25}
    assert suite.runs[0].harness["dynamo_timed:_compile.compile_inner"] == 3.0


def test_a_row_without_a_positive_compilation_latency_is_an_error(tmp_path: Path) -> None:
    p = _write(tmp_path, f"{HEADER}\ncuda,a,4,1.5,2.0,-0.125000,1,1,1,1,1,0,0,0,0,0\n"
                         "cuda,b,4,1.5,2.0,0.000000,1,1,1,1,1,0,0,0,0,0\n"
                         "cuda,c,4,1.5,2.0,0,1,1,1,1,1,0,0,0,0,0\n"
                         "cuda,d,4,1.5,2.0,nan,1,1,1,1,1,0,0,0,0,0\n")
    suite = read_harness_csvs([p])
    errors = {r.entry: r.error for r in suite.runs}
    assert errors["a"] == "compilation_latency -0.125 s is no compile time (the dashboard counts only values above 0)"
    assert errors["b"] is not None and errors["b"].startswith("compilation_latency 0 s")
    assert errors["c"] == errors["d"] == "the row has no compilation_latency"
    assert all(not r.ok and TOTAL not in r.measures and r.harness["speedup"] == 1.5 for r in suite.runs)


def test_a_header_from_a_failed_first_model_and_unknown_columns(tmp_path: Path) -> None:
    # the first model failed: its short header stays until a longer one replaces it (output_csv)
    p = _write(tmp_path, "dev,name,batch_size,speedup,abs_latency\ncpu,a,0,0.000000,0.000000\n")
    suite = read_harness_csvs([p])
    assert [(r.entry, r.error) for r in suite.runs] == [("a", FAILED_ROW)]
    p = _write(tmp_path, f"{HEADER},brand_new_stat,note\ncpu,a,2,2.0,58.9,38.538333,0.92,250.8,271.5,545,1,0,0,0,0,1,"
                         "7,hello\n")
    run = read_harness_csvs([p]).runs[0]
    assert run.measures == {TOTAL: 38.538333} and run.harness["brand_new_stat"] == 7.0
    assert "note" not in run.harness and "dev" not in run.harness and "name" not in run.harness


def test_models_on_several_devices_or_tags_are_named_apart(tmp_path: Path) -> None:
    p = _write(tmp_path, "dev,name,batch_size,tag,speedup,abs_latency,compilation_latency\n"
                         "cuda,m,4,base,1.5,2.0,3.0\ncpu,m,4,base,1.2,9.0,5.0\ncuda,m,4,pr,1.5,2.0,3.5\n")
    suite = read_harness_csvs([p])
    assert [(r.entry, r.repeat, r.measures[TOTAL]) for r in suite.runs] == [
        ("m@cpu@base", 1, 5.0), ("m@cuda@base", 1, 3.0), ("m@cuda@pr", 1, 3.5)]
    one_dev = _write(tmp_path, "dev,name,batch_size,speedup,abs_latency,compilation_latency\ncuda,m,4,1.5,2.0,3.0\n",
                     "one.csv")
    assert [r.entry for r in read_harness_csvs([one_dev]).runs] == ["m"]


def test_several_files_are_repeats_in_the_order_given(tmp_path: Path) -> None:
    a = _write(tmp_path, f"{HEADER}\ncuda,m,4,1.5,2.0,3.0,1,1,1,1,1,0,0,0,0,0\n", "run1.csv")
    b = _write(tmp_path, f"{HEADER}\ncuda,m,4,1.5,2.0,4.0,1,1,1,1,1,0,0,0,0,0\n", "run2.csv")
    assert _runs(read_harness_csvs([b, a]), "m") == [(1, 4.0, None), (2, 3.0, None)]
    assert read_harness_csvs([b, a]).source == f"{b}, {a}"


def test_a_headerless_file_as_runner_py_reads_it() -> None:
    suite = read_harness_csvs([LEGACY])
    assert _runs(suite, "alexnet") == [(1, 6.5561, None)]
    assert _runs(suite, "dcgan") == [(1, 5.7151, None)]
    assert _runs(suite, "drq") == [(1, None, FAILED_ROW)]
    assert suite.runs_of("alexnet")[0].harness == {"batch_size": 128.0, "compression_ratio": 1.0008, "speedup": 1.1919}


def test_a_suite_from_csvs_saves_and_loads(tmp_path: Path) -> None:
    suite = read_harness_csvs([PERF, METRICS])
    save_suite(suite, tmp_path)
    assert load_suite(tmp_path) == suite


def test_windows_line_ends_a_bom_and_blank_lines(tmp_path: Path) -> None:
    p = tmp_path / "w.csv"
    p.write_bytes(b"\xef\xbb\xbfdev,name,batch_size,speedup,abs_latency,compilation_latency\r\n\r\n"
                  b"cuda,m,4,1.5,2.0,3.0\r\n")
    assert _runs(read_harness_csvs([p]), "m") == [(1, 3.0, None)]


@pytest.mark.parametrize(("text", "says"), [
    ("", "empty, not a harness CSV"),
    ("\n\n", "empty, not a harness CSV"),
    ("a,b,c\n1,2,3\n", "no header naming dev, name, batch_size"),
    ("dev,name,batch_size,accuracy,calls_captured\ncuda,m,4,pass,5\n", "an --accuracy CSV"),
    ("dev,name,batch_size,graphs,graph_calls,captured_ops\ncuda,m,4,1,1,3\n", "not a harness performance or"),
    ("dev,batch_size,speedup\ncuda,4,1.0\n", "no dev and name columns"),
    ("dev,name,batch_size,speedup,abs_latency,compilation_latency\ncuda,m,4,1,2,3,4,5\n", ":2: 8 cells under"),
    ("dev,name,batch_size,speedup,abs_latency,compilation_latency\ncuda,,4,1,2,3\n", ":2: a row without a model"),
    ("dev,name,batch_size,speedup,abs_latency,compilation_latency\n", "no model row in it"),
    ('dev,name,batch_size,speedup\ncuda,"m,4,1\n', "not a valid CSV"),
    ("dev,name,batch_size,speedup\ncuda,m\0,4,1\n", "not a valid CSV"),
])
def test_a_bad_file_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(DynaprofError) as e:
        read_harness_csvs([p])
    assert says in str(e.value) and "\n" not in str(e.value) and str(p) in str(e.value)


def test_files_that_cannot_be_read(tmp_path: Path) -> None:
    cases = [(tmp_path / "missing.csv", "no such file"), (tmp_path, "a folder, not a harness CSV")]
    bad = tmp_path / "latin1.csv"
    bad.write_bytes(b"dev,name\ncuda,caf\xe9\n")
    cases.append((bad, "cannot read it"))
    for path, says in cases:
        with pytest.raises(DynaprofError, match=says):
            read_harness_csvs([path])
    with pytest.raises(DynaprofError, match="no harness CSV given"):
        read_harness_csvs([])
    with pytest.raises(DynaprofError, match="given twice"):
        read_harness_csvs([PERF, PERF.parent / ".." / "harness" / PERF.name])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(["dev", "name", "speedup", "compilation_latency", "0", "0.5", "-1", "nan",
                                          "m", "", "_compile.compile_inner", '"', "\r"]), max_size=6), max_size=5))
def test_any_text_is_a_suite_or_one_line(tmp_path: Path, rows: list[list[str]]) -> None:
    p = _write(tmp_path, "\n".join(",".join(r) for r in rows), "fuzz.csv")
    try:
        suite = read_harness_csvs([p])
    except DynaprofError as e:
        assert "\n" not in str(e)
        return
    assert suite.runs and all(r.ok == (TOTAL in r.measures) for r in suite.runs)
    assert all(v > 0 for r in suite.runs for v in r.measures.values())
    model_summaries(suite)
