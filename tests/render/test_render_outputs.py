"""Writing a run folder: compressed exports, renderer notes, stale exports."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from dynaprof.model import FunctionRef, Stack
from dynaprof.render.base import Deferred, RenderContext, RenderOptions
from dynaprof.render.folded import folded_text, render_folded
from dynaprof.render.speedscope import render_speedscope
from dynaprof.run_folder import writer
from tests.factories import frame, make_session, seed_session


def _tree(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` (compressed ones decompressed, under their plain names)."""
    out = {}
    for p in sorted(d.rglob("*")):
        if p.is_file():
            rel = str(p.relative_to(d))
            data = p.read_bytes()
            out[rel.removesuffix(".gz")] = gzip.decompress(data) if rel.endswith(".gz") else data
    return out


def test_gzip_exports_hold_the_plain_text_and_are_deterministic() -> None:
    s = seed_session()
    plain = {**render_folded(RenderContext(s)), **render_speedscope(RenderContext(s))}
    opts = RenderOptions(exports="gzip")
    files = {**render_folded(RenderContext(s, opts)), **render_speedscope(RenderContext(s, opts))}
    assert sorted(files) == sorted(f"{name}.gz" for name in plain)
    again = {**render_folded(RenderContext(s, opts)), **render_speedscope(RenderContext(s, opts))}
    for name, content in files.items():
        assert isinstance(content, Deferred)
        raw = content.result()
        assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # gzip, no timestamp
        text = plain[name.removesuffix(".gz")]
        assert isinstance(text, str)
        assert gzip.decompress(raw).decode() == text
        other = again[name]
        assert isinstance(other, Deferred) and other.result() == raw


def test_exports_none_writes_neither() -> None:
    opts = RenderOptions(exports="none")
    assert render_folded(RenderContext(seed_session(), opts)) == {}
    assert render_speedscope(RenderContext(seed_session(), opts)) == {}


def _text_sorted_folded(s: object, view: str) -> str:
    """The folded text as first written: grouped and sorted by the joined path text."""
    from dynaprof.analysis.attribution import stack_categories
    from dynaprof.analysis.stacks import NO_COMPILER_STACK, NOT_TRACING, StackNode, folded_label
    from dynaprof.model.session import CATEGORY_LABELS, Session

    assert isinstance(s, Session) and s.samples is not None
    cats = stack_categories(s)
    labels = [folded_label(StackNode(f.name, f.filename, f.lineno, f.kind)) for f in s.functions]
    agg: dict[str, float] = {}
    for st, cat in zip(s.samples.stacks, cats, strict=True):
        ids = st.compiler if view == "compiler" else st.traced
        if ids:
            path = ";".join(labels[j] for j in ids)
        elif view == "compiler":
            path = NO_COMPILER_STACK
        else:
            path = f"{NOT_TRACING};[{CATEGORY_LABELS.get(cat, cat)}]"
        agg[path] = agg.get(path, 0.0) + st.seconds
    return "".join(f"{p} {round(v * 1e6)}\n" for p, v in sorted(agg.items()) if round(v * 1e6) > 0)


@pytest.mark.parametrize("names", [["f", "g", "h"], ["f", "f x", "f;y", "f,z", "g"], ["a", "a.b", "a b", "b"]])
def test_folded_lines_sort_as_their_text(names: list[str]) -> None:
    """Paths are grouped and sorted as label tuples; where that order could differ from the
    text's (a label that is a prefix of another going on with a character before ``;``), the
    text order is used."""
    import random

    rng = random.Random(len(names))
    funcs = [FunctionRef(n, "", 0, "python") for n in names] + [FunctionRef(n, "", 0, "native") for n in names]
    stacks = [
        Stack("0/0", 0, 1, [rng.randrange(len(funcs)) for _ in range(rng.randint(0, 4))],
              [rng.randrange(len(funcs)) for _ in range(rng.randint(0, 2))], 1, rng.choice([0.001, 0.0015, 0.002]))
        for _ in range(400)
    ]
    s = make_session([frame("0/0")], stacks, funcs)
    for view in ("compiler", "traced"):
        assert folded_text(s, view) == _text_sorted_folded(s, view)  # type: ignore[arg-type]


def _render(tmp: Path, name: str, opts: RenderOptions) -> tuple[dict[str, bytes], list[str]]:
    out = tmp / name
    out.mkdir()
    written, notes = writer.write_run_folder(seed_session(), out, opts)
    assert sorted(written) == sorted(p for p in out.rglob("*") if p.is_file())
    return _tree(out), notes


def test_a_renderer_note_is_listed_in_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no Graphviz: a note the report must list
    tree, notes = _render(tmp_path, "run", RenderOptions(exports="gzip"))
    assert any("callgraph.svg not made" in n for n in notes)
    assert b"callgraph.svg not made" in tree["report.html"]


def test_a_re_render_drops_the_other_form_of_each_export(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    writer.write_run_folder(seed_session(), out, RenderOptions(exports="plain"))
    assert (out / "speedscope.json").exists() and (out / "stacks-compiler.folded").exists()
    writer.write_run_folder(seed_session(), out, RenderOptions(exports="gzip"))
    names = {p.name for p in out.iterdir()}
    assert {"speedscope.json.gz", "stacks-compiler.folded.gz", "stacks-traced.folded.gz"} <= names
    assert not names & {"speedscope.json", "stacks-compiler.folded", "stacks-traced.folded"}
    writer.write_run_folder(seed_session(), out, RenderOptions(exports="none"))  # leaves them be
    assert "speedscope.json.gz" in {p.name for p in out.iterdir()}


def test_auto_exports_leave_out_only_a_huge_compiler_folded_file() -> None:
    s = seed_session()
    ctx = RenderContext(s, RenderOptions(exports="auto"))
    assert sorted(render_folded(ctx)) == ["stacks-compiler.folded.gz", "stacks-traced.folded.gz"]
    assert list(render_speedscope(ctx)) == ["speedscope.json.gz"] and ctx.notes == []
    ctx = RenderContext(s, RenderOptions(exports="auto", auto_folded_max_frames=10))
    assert sorted(render_folded(ctx)) == ["stacks-traced.folded.gz"]
    (note,) = ctx.notes
    assert "stacks-compiler.folded.gz not written" in note and "--exports gzip" in note
