"""Every registered renderer over odd sessions: no crash, and the same bytes every time.

Each session is loaded from the same JSON text twice and rendered into two folders the way
``dynaprof report`` does (``run_folder.writer.write_run_folder``: attribution, then every renderer in the
registry, gzip exports); the two folders must hold the same files with the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from dynaprof.model import GraphBreak, PropertyTrace, Session, Stack
from dynaprof.model.store import session_from_text, session_to_text
from dynaprof.render.base import RenderOptions
from dynaprof.render.registry import RENDERERS
from dynaprof.run_folder import writer
from tests.factories import DYN, SP, FunctionTable, frame, make_session, seed_session
from tests.helpers import TESTS_DIR

DATA = TESTS_DIR / "data" / "sessions"

#: markup, entities, quotes, newlines, right-to-left override, control and escape characters
HOSTILE = "<evil>&amp;\"q\" 'a'\n\r\tx\u202eevil\u202c\x00\x07\x1b[31m]]></script>\u2028;|`*"


def empty() -> Session:
    return make_session([])


def hostile() -> Session:
    t = FunctionTable()
    root = t(HOSTILE + "compile", DYN + "convert_frame.py", 1)
    guards = t("build_guards" + HOSTILE, DYN + "guards.py", 2)
    user = t(HOSTILE, f"/work/{HOSTILE}.py", 3, "traced")
    prop = t("Mod.weight" + HOSTILE, SP + "torch/nn/utils/parametrize.py", 4, "property")
    frames = [
        frame(f"{i}/0", name=HOSTILE, filename=f"/work/{HOSTILE}.py", lineno=i + 1, start_s=float(i), restarts=1,
              restart_reasons=[HOSTILE], graph_breaks=1, graph_break_reasons=[GraphBreak(HOSTILE, HOSTILE, 2)],
              properties=[PropertyTrace(HOSTILE, HOSTILE, HOSTILE, SP + "torch/nn/utils/parametrize.py", 1,
                                        True, 2, 1, 0.25)])
        for i in range(3)
    ]
    stacks = [Stack(f"{i % 3}/0", i % 2, 1, [root, guards] if i % 2 else [root], [user, prop] if i % 3 else [],
                    3, 0.003 * (i + 1)) for i in range(12)]
    s = make_session(frames, stacks, t.functions)
    s.run.target = HOSTILE
    s.run.argv = [HOSTILE]
    s.run.hostname = HOSTILE
    s.capture.warnings = [HOSTILE]
    return s


def million_samples() -> Session:
    """1,000,000 samples aggregated into 10,000 stacks over 50 compiled frames."""
    rng = random.Random(14)
    t = FunctionTable()
    compiler = [t(f"compiler_fn_{i}", DYN + f"module_{i % 40}.py", i) for i in range(400)]
    traced = [t(f"user_fn_{i}", f"/work/model_{i % 20}.py", i, "traced") for i in range(200)]
    frames = [frame(f"{i}/0", name=f"forward_{i}", start_s=float(i), compile_time_s=20.0) for i in range(50)]
    stacks = []
    for i in range(10_000):
        depth = rng.randint(5, 30)
        path = [compiler[0], *(rng.choice(compiler) for _ in range(depth))]
        user = [traced[0], *(rng.choice(traced) for _ in range(rng.randint(0, 8)))] if i % 4 else []
        stacks.append(Stack(f"{i % 50}/0", 0, 1, path, user, 100, 0.1))
    s = make_session(frames, stacks, t.functions)
    assert s.samples is not None and s.samples.count == 1_000_000
    return s


def schema_1() -> Session:
    """A session as dynaprof wrote schema 1 (no frame kinds, cache markers or cause x phase axes)."""
    return session_from_text((DATA / "schema1.json").read_text(encoding="utf-8"))


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _render_twice(tmp_path: Path, make: Callable[[], Session]) -> dict[str, bytes]:
    text = session_to_text(make())
    trees = []
    for side in ("a", "b"):
        out = tmp_path / side
        written, notes = writer.write_run_folder(session_from_text(text), out, RenderOptions(exports="gzip"))
        assert not [n for n in notes if n.startswith("could not render")], notes
        assert sorted(written) == sorted(p for p in out.rglob("*") if p.is_file())
        trees.append(_tree(out))
    a, b = trees
    assert sorted(a) == sorted(b)
    assert [name for name in a if a[name] != b[name]] == []
    return a


CASES: dict[str, Callable[[], Session]] = {
    "empty": empty,
    "no_samples": lambda: seed_session(parametrized=False, with_samples=False),
    "hostile_names": hostile,
    "schema_1": schema_1,
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_renderer_is_deterministic(tmp_path: Path, name: str) -> None:
    files = _render_twice(tmp_path, CASES[name])
    assert {"session.json", "summary.txt", "summary.md", "report.html", "trace.json"} <= set(files)


def test_hostile_names_stay_data(tmp_path: Path) -> None:
    files = _render_twice(tmp_path, hostile)
    for name in ("report.html", "flame-compiler.svg", "flame-traced.svg"):
        assert b"<evil>" not in files[name] and b"</script>\xe2\x80\xa8" not in files[name], name
    assert b"\x1b" not in files["summary.txt"] and b"\x00" not in files["summary.md"]


@pytest.mark.slow
def test_a_million_samples_render_deterministically(tmp_path: Path) -> None:
    files = _render_twice(tmp_path, million_samples)
    assert {"flame-compiler.svg", "stacks-compiler.folded.gz", "speedscope.json.gz"} <= set(files)


def test_every_registered_renderer_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the cases above exercise: ``write_run_folder`` runs each renderer of the registry."""
    ran: list[str] = []
    real_renderer, real_starter = writer.get_renderer, writer.get_starter

    def renderer(name: str):  # type: ignore[no-untyped-def]
        ran.append(name)
        return real_renderer(name)

    def starter(name: str):  # type: ignore[no-untyped-def]
        found = real_starter(name)
        if found is not None:
            ran.append(name)
        return found

    monkeypatch.setattr(writer, "get_renderer", renderer)
    monkeypatch.setattr(writer, "get_starter", starter)
    writer.write_run_folder(hostile(), tmp_path, RenderOptions(exports="gzip"))
    assert sorted(set(ran)) == sorted(RENDERERS)
