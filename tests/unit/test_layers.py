"""The package's layers (docs/architecture.md), checked on the source with ``ast``.

Every import counts: module level, inside functions, under ``TYPE_CHECKING``, and module names
written as strings (``importlib.import_module("dynaprof.x")``, the renderer registry's
``"dynaprof.render.x:func"``).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.helpers import ROOT_DIR

PACKAGE = ROOT_DIR / "dynaprof"

#: layer -> the layers it may import (besides itself and the leaves below)
ALLOWED: dict[str, frozenset[str]] = {
    "cli": frozenset({"executors", "run_folder", "render", "analysis", "ingest", "capture", "model"}),
    "executors": frozenset({"model"}),
    "run_folder": frozenset({"render", "analysis", "ingest", "model"}),
    "render": frozenset({"analysis", "model"}),
    "analysis": frozenset({"model"}),
    "ingest": frozenset({"model"}),
    "capture": frozenset({"model"}),
    "model": frozenset(),
}
#: modules any layer may import: they import nothing of dynaprof
LEAVES = frozenset({"dynaprof.fmt", "dynaprof.errors", "dynaprof.version"})
#: top-level modules at the CLI's level (the in-process API, the notebook magic, the pytest plugin)
CLI_LEVEL = frozenset({
    "dynaprof", "dynaprof.api", "dynaprof.notebook", "dynaprof.pytest_plugin", "dynaprof.__main__", "dynaprof.pipeline",
})

_MODULE_STRING = re.compile(r"^(dynaprof(?:\.\w+)+)(?::\w+)?$")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The dynaprof module ``name`` refers to (itself, or the module holding that attribute)."""
    modules = _modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> list[tuple[int, str]]:
    """(line, imported name) for every import in ``module``, dynaprof's and others'."""
    path = _modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            out.extend((node.lineno, f"{source}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _MODULE_STRING.match(node.value)
            if match and match.group(1) in _modules() and match.group(1) != module:
                out.append((node.lineno, match.group(1)))
    return out


def _edges(module: str) -> list[tuple[int, str]]:
    out = []
    for line, name in _imports(module):
        if name == "dynaprof" or name.startswith("dynaprof."):
            target = _resolve(name)
            if target is not None and target != module:
                out.append((line, target))
    return out


def layer(module: str) -> str:
    if module in LEAVES:
        return "leaf"
    if module in CLI_LEVEL:
        return "cli"
    return module.split(".")[1]


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        assert layer(module) in {*ALLOWED, "leaf"}, f"{module}: not in a layer (add it to tests/unit/test_layers.py)"


def test_leaves_import_nothing_of_dynaprof() -> None:
    for module in LEAVES:
        assert _edges(module) == [], module


def test_imports_follow_the_layers() -> None:
    breaks = []
    for module in _modules():
        mine = layer(module)
        for line, target in _edges(module):
            theirs = layer(target)
            if theirs == "leaf" or theirs == mine or theirs in ALLOWED.get(mine, frozenset()):
                continue
            where = _modules()[module].relative_to(PACKAGE.parent)
            breaks.append(f"{where}:{line}: {mine} imports {theirs} ({target})")
    assert breaks == []


def test_nothing_below_imports_the_cli_level_modules() -> None:
    for module in _modules():
        if layer(module) == "cli":
            continue
        assert not [t for _, t in _edges(module) if t in CLI_LEVEL], module


#: the only modules outside ``dynaprof/cli`` that may import it: ``python -m dynaprof`` runs the CLI
CLI_USERS = frozenset({"dynaprof.__main__"})


def test_the_library_never_imports_the_cli() -> None:
    """``api``, ``notebook``, ``pytest_plugin`` and ``pipeline`` sit at the CLI's level but call the
    pipeline and the run-folder layer, never ``dynaprof.cli``: what both need lives below it."""
    breaks = []
    for module in _modules():
        if module == "dynaprof.cli" or module.startswith("dynaprof.cli.") or module in CLI_USERS:
            continue
        for line, target in _edges(module):
            if target == "dynaprof.cli" or target.startswith("dynaprof.cli."):
                breaks.append(f"{_modules()[module].relative_to(PACKAGE.parent)}:{line}: imports {target}")
    assert breaks == []
    assert [t for _, t in _edges("dynaprof.__main__")] == ["dynaprof.cli"], "the check no longer sees an import"


def test_no_import_cycle() -> None:
    graph = {m: sorted({t for _, t in _edges(m)}) for m in _modules()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node)
    assert [" -> ".join(c) for c in cycles] == []


def _touches_torch_internals(module: str) -> list[str]:
    found = [f"{line}: {name}" for line, name in _imports(module) if name.startswith("torch._")]
    tree = ast.parse(_modules()[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if called in {"_private", "import_module", "__import__"} and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("torch._"):
                    found.append(f"{node.lineno}: {called}({arg.value!r})")
                elif called == "_private":
                    found.append(f"{node.lineno}: _private(...)")
        elif isinstance(node, ast.FunctionDef) and node.name == "_private":
            found.append(f"{node.lineno}: def _private")
    return found


def test_only_capture_touches_torch_internals() -> None:
    outside = {m: found for m in _modules() if layer(m) != "capture" and (found := _touches_torch_internals(m))}
    assert outside == {}
    assert _touches_torch_internals("dynaprof.capture.hooks.compile_windows"), "the check no longer sees the hooks"


def test_capture_reaches_torch_internals_only_through_private() -> None:
    """One way in (``capture.torch_private._private``), so every touch is a call that can be guarded
    and found: no ``import torch._x``, no ``importlib.import_module("torch._x")``."""
    defined = [m for m in _modules() if any("def _private" in x for x in _touches_torch_internals(m))]
    assert defined == ["dynaprof.capture.torch_private"]
    other = {m: bad for m in _modules() if layer(m) == "capture"
             and (bad := [x for x in _touches_torch_internals(m) if "_private(" not in x and "def _private" not in x])}
    assert other == {}


#: a file in dynaprof/ may run past this many lines only where docs/architecture.md lists it, with the reason
MAX_LINES = 600
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
_LONG_ENTRY = re.compile(r"^\* `(dynaprof/[\w/]+\.py)`\s*(?:—|-|:)\s*(\S.*)$")


def _long_files_listed() -> dict[str, str]:
    """``path -> reason`` from the architecture document's "Files over 600 lines" section."""
    text = ARCHITECTURE.read_text()
    section = text.split("## Files over 600 lines", 1)
    assert len(section) == 2, "docs/architecture.md has no 'Files over 600 lines' section"
    body = section[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for line in body.splitlines() if (m := _LONG_ENTRY.match(line))}


def test_long_files_are_listed_with_their_reason() -> None:
    long = {str(p.relative_to(PACKAGE.parent)): n for p in _modules().values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    listed = _long_files_listed()
    assert {p: n for p, n in long.items() if p not in listed} == {}, "over 600 lines: split it, or list it and why"
    assert sorted(p for p in listed if p not in long) == [], "listed as long but no longer is: drop the entry"


def _torch_path_tests(module: str) -> list[int]:
    """Lines of ``module`` that test a path for ``"/torch/"`` (``in`` / ``not in``) themselves."""
    tree = ast.parse(_modules()[module].read_text())
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant) and node.left.value == "/torch/"
            and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)]


def test_torch_files_are_told_by_one_rule() -> None:
    """Capture and analysis ask ``model.torch_files.torch_file`` whether a file is torch's; nobody
    spells the test again (a second spelling drifts, and a fix to the rule would miss it)."""
    found = {m: lines for m in _modules() if (lines := _torch_path_tests(m))}
    assert list(found) == ["dynaprof.model.torch_files"]


def test_a_module_name_in_two_packages_is_one_concept_seen_from_each() -> None:
    """Issue #50: ``journal`` or ``ranks`` in two packages must be the same concept seen from two
    layers, and the first line of each docstring says so ("... seen from capture: ..."); anything
    else gets a name of its own."""
    by_stem: dict[str, list[Path]] = {}
    for p in _modules().values():
        if p.name != "__init__.py":
            by_stem.setdefault(p.stem, []).append(p)
    shared = {stem: paths for stem, paths in by_stem.items() if len(paths) > 1}
    assert "journal" in shared  # the check still sees the pairs it is about
    for stem, paths in shared.items():
        layers = [layer(_module_name(p)) for p in paths]
        assert len(set(layers)) == len(layers), f"{stem}: twice in one layer ({paths}): give one a name of its own"
        for p, lay in zip(paths, layers, strict=True):
            first = ast.get_docstring(ast.parse(p.read_text())) or ""
            line = first.splitlines()[0] if first else ""
            assert f"seen from {'the ' if lay in ('model', 'cli') else ''}{lay}" in line, (p, line)
