"""Tests show what they cost: ``tests/unit`` and ``tests/render`` never run torch.compile unmarked.

A test there that compiles (``torch.compile``, ``torch._dynamo.optimize``) or runs a script (the CLI's
``run``, ``tests.conftest.profile``, ``python script.py`` in a subprocess) must carry the ``torch``
marker, or live in ``tests/e2e``. Checked on the source with ``ast``: a test counts as running torch
when its body, a helper of its module it calls, or a fixture of its module it takes does one of
those, so a new real run cannot hide behind a helper.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import TESTS_DIR

FOLDERS = ("unit", "render")
#: subprocess functions that start a process
_SPAWN = frozenset({"run", "Popen", "check_output", "check_call", "call"})


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _argv(call: ast.Call) -> list[ast.expr] | None:
    first = call.args[0] if call.args else None
    return list(first.elts) if isinstance(first, ast.List) else None


def _runs_torch(call: ast.Call, conftest_profile: bool) -> bool:
    """Whether this call compiles or starts a process that may (conservative where argv is not literal)."""
    name = _dotted(call.func)
    if name in {"torch.compile", "torch._dynamo.optimize"} or name.endswith("._dynamo.optimize"):
        return True
    if name == "run_dynaprof":  # the CLI: only `run` runs a script
        argv = _argv(call)
        return argv is None or not argv or not (isinstance(argv[0], ast.Constant) and argv[0].value != "run")
    if name == "profile" and conftest_profile:
        return True
    if name.startswith("subprocess.") and name.rpartition(".")[2] in _SPAWN:
        argv = _argv(call)
        if argv is None or not argv or _dotted(argv[0]) != "sys.executable":
            return False  # another program (dot, tlparse)
        # `python -m dynaprof <cmd>` runs a script only for `run`
        literal = [a.value for a in argv[1:4] if isinstance(a, ast.Constant)]
        return literal[:2] != ["-m", "dynaprof"] or literal[2:] == ["run"]
    return False


def _has_torch_mark(decorators: list[ast.expr]) -> bool:
    return any(_dotted(d.func if isinstance(d, ast.Call) else d) == "pytest.mark.torch" for d in decorators)


def _module_marked(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(_dotted(t) == "pytestmark" for t in node.targets):
            return "pytest.mark.torch" in ast.unparse(node.value)
    return False


def unmarked_real_runs(path: Path) -> list[str]:
    """The tests of ``path`` that run torch without the ``torch`` marker."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if _module_marked(tree):
        return []
    conftest_profile = any(
        isinstance(n, ast.ImportFrom) and n.module == "tests.conftest" and any(a.name == "profile" for a in n.names)
        for n in ast.walk(tree)
    )
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    direct = {name for name, f in funcs.items()
              if any(isinstance(c, ast.Call) and _runs_torch(c, conftest_profile) for c in ast.walk(f))}  # fmt: skip
    uses = {name: {n.id for n in ast.walk(f) if isinstance(n, ast.Name) and n.id in funcs}
            | {a.arg for a in f.args.args if a.arg in funcs}
            for name, f in funcs.items()}  # fmt: skip
    running = set(direct)
    grew = True
    while grew:  # through helpers and fixtures, however deep
        more = {name for name, used in uses.items() if used & running} - running
        running |= more
        grew = bool(more)
    return sorted(
        f"{path.parent.name}/{path.name}::{name}"
        for name in running
        if name.startswith("test") and not _has_torch_mark(funcs[name].decorator_list)
    )


def test_unit_and_render_tests_that_run_torch_carry_the_torch_marker() -> None:
    found = [hit for folder in FOLDERS for path in sorted((TESTS_DIR / folder).glob("test_*.py"))
             for hit in unmarked_real_runs(path)]  # fmt: skip
    assert found == [], "move these to tests/e2e or mark them @pytest.mark.torch: " + ", ".join(found)


def test_the_scan_sees_a_compile_through_a_helper_and_a_fixture(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import subprocess, sys\nimport pytest, torch\n"
        "from tests.conftest import run_dynaprof\n"
        "def helper():\n    return torch.compile(lambda x: x)\n"
        "@pytest.fixture\ndef logs():\n    subprocess.Popen([sys.executable, 'script.py'])\n"
        "def test_via_helper():\n    helper()\n"
        "def test_via_fixture(logs):\n    pass\n"
        "def test_cli_run(tmp_path):\n    run_dynaprof(['run', 's.py'], tmp_path)\n"
        "def test_cli_report(tmp_path):\n    run_dynaprof(['report', 'r'], tmp_path)\n"
        "def test_dynaprof_report():\n    subprocess.run([sys.executable, '-m', 'dynaprof', 'report', 'r'])\n"
        "def test_dot():\n    subprocess.run(['dot', '-Tsvg'])\n"
        "@pytest.mark.torch\ndef test_marked():\n    helper()\n",
        encoding="utf-8",
    )
    hits = [h.rpartition("::")[2] for h in unmarked_real_runs(tmp_path / "test_x.py")]
    assert hits == ["test_cli_run", "test_via_fixture", "test_via_helper"]
