"""One pipeline, small functions: checked on the source with ``ast``.

``dynaprof/pipeline.py`` is the only code that reads a capture journal, assembles it or writes a
run folder; every entry point (run, report, the API, the notebook, the pytest plugin) goes through
it. And no function in ``dynaprof/`` runs past ``MAX_FUNCTION_LINES`` except the hot loops listed
in ``LONG_FUNCTIONS``, each with the reason it stays one function.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT_DIR

PACKAGE = ROOT_DIR / "dynaprof"
PIPELINE = PACKAGE / "pipeline.py"
#: what turns a journal into a session, and a session into a run folder
PIPELINE_STEPS = frozenset({"read_journal", "assemble", "assemble_plain", "write_run_folder", "write_session_only"})

MAX_FUNCTION_LINES = 80
#: ``path:function`` -> why it stays one function past the limit (a parser's hot loop only)
LONG_FUNCTIONS = {
    "dynaprof/ingest/torch_trace.py:events": "the TORCH_TRACE log parser's loop, once per line of logs of "
    "millions of lines: a call per line in helpers costs measurably (benchmarks/bench_scale.py)",
}


def _calls(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in PIPELINE_STEPS:
                out.append((node.lineno, name))
    return out


def test_only_the_pipeline_reads_journals_assembles_and_writes_run_folders() -> None:
    outside = [f"{p.relative_to(ROOT_DIR)}:{line}: {name}" for p in sorted(PACKAGE.rglob("*.py")) if p != PIPELINE
               for line, name in _calls(p)]  # fmt: skip
    assert outside == [], "go through dynaprof.pipeline: " + ", ".join(outside)
    assert {name for _, name in _calls(PIPELINE)} == PIPELINE_STEPS, "the check no longer sees the pipeline's calls"


def _long_functions() -> dict[str, int]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    out[f"{p.relative_to(ROOT_DIR)}:{node.name}"] = lines
    return out


def test_no_function_is_long_unless_listed_with_its_reason() -> None:
    long = _long_functions()
    assert sorted(set(long) - set(LONG_FUNCTIONS)) == [], f"split these (lines): {long}"
    assert sorted(set(LONG_FUNCTIONS) - set(long)) == [], "no longer long: drop from LONG_FUNCTIONS"
