"""The private torch names capture reaches (``torch_private.PRIVATE_NAMES``): the list is complete
against the code (read with ``ast``), and the installed torch has every name it should, so a new
release's break is one line of this test's failure (and of ``scripts/torch_names.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dynaprof.capture.torch_private import PRIVATE_NAMES, PrivateName, private_name_report, release
from tests.helpers import ROOT_DIR, torch_version_text

CAPTURE = ROOT_DIR / "dynaprof" / "capture"
#: attributes read of a registered name beyond the registry's depth (module, then at most two)
DEPTH = 2


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "torch...."`` constants (the hooks name their modules so)."""
    out = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(
            node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            out[target.id] = value.value
    return out


def reached(path: Path) -> set[tuple[str, tuple[str, ...]]]:
    """(module, attributes) of every ``_private(module)`` in ``path`` and the attribute chains read
    of it, directly or through a local name it was assigned to; dunder attributes end a chain."""
    tree = ast.parse(path.read_text(), str(path))
    constants = _string_constants(tree)

    def resolve(node: ast.AST, names: dict[str, tuple[str, tuple[str, ...]]]) -> tuple[str, tuple[str, ...]] | None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_private":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                return arg.value, ()
            if isinstance(arg, ast.Name) and arg.id in constants:
                return constants[arg.id], ()
            raise AssertionError(f"{path}:{node.lineno}: _private() of a module this test cannot read")
        if isinstance(node, ast.Name):
            return names.get(node.id)
        if isinstance(node, ast.Attribute) and not node.attr.startswith("__"):
            base = resolve(node.value, names)
            return (base[0], (*base[1], node.attr)) if base else None
        return None

    found: set[tuple[str, tuple[str, ...]]] = set()
    for scope in ast.walk(tree):
        if not isinstance(scope, (ast.Module, ast.FunctionDef)):
            continue
        names: dict[str, tuple[str, tuple[str, ...]]] = {}
        for node in ast.walk(scope):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                got = resolve(node.value, names)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if got and isinstance(t, ast.Name):
                        names[t.id] = got
        for node in ast.walk(scope):
            if isinstance(node, (ast.Attribute, ast.Call)):
                got = resolve(node, names)
                if got:
                    found.add((got[0], got[1][:DEPTH]))
    return found


def test_every_private_name_capture_reaches_is_listed() -> None:
    listed = {n.name for n in PRIVATE_NAMES}
    prefixes = {".".join(n.split(".")[:i]) for n in listed for i in range(1, n.count(".") + 2)}
    found = {(p.relative_to(ROOT_DIR).as_posix(), ".".join((m, *attrs)))
             for p in sorted(CAPTURE.rglob("*.py")) for m, attrs in reached(p)}
    assert len(found) > 40  # the scan reads the hooks
    assert sorted(f"{path}: {name}" for path, name in found if name not in prefixes) == []


def test_every_listed_name_is_spelled_in_capture() -> None:
    """No stale entry: each listed name's last part appears in capture's source."""
    source = "\n".join(p.read_text() for p in CAPTURE.rglob("*.py") if p.name != "torch_private.py")
    assert [n.name for n in PRIVATE_NAMES if n.name.rsplit(".", 1)[-1] not in source] == []


@pytest.mark.torch
@pytest.mark.versions
def test_the_installed_torch_has_every_name_it_should() -> None:
    """One line per private name this torch should have and lacks (a hook that will only warn)."""
    pytest.importorskip("torch")
    lines, broken = private_name_report(torch_version_text())
    assert broken == 0, "\n".join(lines)


def test_the_report_says_each_missing_name_in_one_line() -> None:
    names = (PrivateName("torch.a.old", "hook_a", until="2.6"), PrivateName("torch.a.new", "hook_b", since="2.6"),
             PrivateName("torch.a.gone", "hook_c"), PrivateName("torch.a.here", "hook_d"))
    present = {"torch.a.old", "torch.a.here"}
    lines, broken = private_name_report("2.4.1+cu121", names, present.__contains__)
    assert broken == 1
    assert lines == ["torch 2.4.1+cu121: 4 private names, 2 missing, 1 of them unexpected",
                     "missing torch.a.new (hook_b; torch 2.6+)", "BROKEN  torch.a.gone (hook_c)"]
    lines, broken = private_name_report("2.13.0", names, {"torch.a.new", "torch.a.gone", "torch.a.here"}.__contains__)
    assert broken == 0 and lines[1:] == ["missing torch.a.old (hook_a; before torch 2.6)"]


def test_release_reads_the_numbers_of_a_version() -> None:
    assert release("2.4.1+cu121") == (2, 4, 1)
    assert release("2.14.0.dev20260101+cpu") == (2, 14, 0)
    assert release("2.6.0a0+git1234") == (2, 6, 0)
    assert release("2.5") < release("2.13.0") and release("2.4.1") < release("2.5")
