"""The run-folder writer: a session's derived data, session.json and every rendered output,
written into one folder. ``dynaprof run``, ``dynaprof report``, the multi-rank views and
``dynaprof.profile()`` all write through :func:`write_run_folder`; nothing here prints (progress
lines go to the caller's ``progress``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dynaprof.analysis.attribution import apply_attribution
from dynaprof.errors import DynaprofError
from dynaprof.ingest.prof_files import load_table
from dynaprof.model.session import SCHEMA_VERSION, Session
from dynaprof.model.store import collector_paused, save_session
from dynaprof.render.base import Deferred, Files, PStatsTable, RenderContext, RenderOptions
from dynaprof.render.registry import RENDERERS, REPORTS, get_renderer, get_starter, planned
from dynaprof.run_folder.write_files import write_files

#: where progress lines go (``pipeline.info``: stderr)
Progress = Callable[[str], None]

#: the bulky exports ``--exports`` decides about; a re-render removes the other form of each
_EXPORTS = ("stacks-compiler.folded", "stacks-traced.folded", "speedscope.json")


def load_cprofile(session: Session, run_dir: Path) -> tuple[dict[str, PStatsTable], list[str]]:
    """The run's cProfile tables (merged as "run", and per frame key), read from its .prof files."""
    tables: dict[str, PStatsTable] = {}
    notes: list[str] = []
    wanted = {"run": session.artifacts.get("cprofile")}
    wanted.update({f.key: f.cprofile for f in session.frames if f.cprofile})
    for key, rel in wanted.items():
        if not rel:
            continue
        try:
            tables[key] = load_table(run_dir / rel)
        except DynaprofError as e:  # the rest of the outputs still render
            notes.append(e.message)
    return tables, notes


@dataclass
class _Outcome:
    """What one renderer did: files written, notes it added, or why it failed."""

    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failure: str | None = None
    took: float = 0.0
    #: files still being made in the background (compressed exports), written last
    pending: dict[str, Deferred] = field(default_factory=dict)

    def flush(self, name: str, out_dir: Path) -> None:
        """Wait for the pending files and write them (a failure making one is this renderer's)."""
        pending, self.pending = self.pending, {}
        for rel, content in pending.items():
            try:
                data = content.result()
            except DynaprofError:
                raise
            except Exception as e:
                self.failure = self.failure or _failure(name, e)
                continue
            self.written += write_files(out_dir, {rel: data})


def _failure(name: str, e: Exception) -> str:
    return f"could not render {name}: {type(e).__name__}: {e} (session.json is saved; please report this)"


class _Begun:
    """A renderer started early (``registry.STARTERS``), finished at its turn."""

    def __init__(self, name: str, ctx: RenderContext) -> None:
        starter = get_starter(name)
        assert starter is not None
        mark, started = len(ctx.notes), time.perf_counter()
        self.finish: Callable[[], Files] | None = None
        self.error: Exception | None = None
        try:
            self.finish = starter(ctx)
        except DynaprofError:
            raise
        except Exception as e:  # reported at its turn, like any renderer failure
            self.error = e
        self.notes = ctx.notes[mark:]
        self.took = time.perf_counter() - started


def _render_one(name: str, ctx: RenderContext, out_dir: Path, begun: _Begun | None = None) -> _Outcome:
    mark, started = len(ctx.notes), time.perf_counter()
    before = begun.notes if begun is not None else []
    try:
        if begun is None:
            files = get_renderer(name)(ctx)
        elif begun.error is not None:
            raise begun.error
        else:
            assert begun.finish is not None
            files = begun.finish()
    except DynaprofError:
        raise
    except Exception as e:  # a renderer bug must not cost the user their profile
        return _Outcome([], before + ctx.notes[mark:], _failure(name, e))
    if ctx.made is not None:
        ctx.made.update(files)
    pending = {rel: c for rel, c in files.items() if isinstance(c, Deferred)}
    written = write_files(out_dir, {rel: c for rel, c in files.items() if rel not in pending})
    took = time.perf_counter() - started + (begun.took if begun is not None else 0.0)
    return _Outcome(written, before + ctx.notes[mark:], None, took, pending)


def _begin(names: list[str], ctx: RenderContext) -> dict[str, _Begun]:
    """Start the renderers that can start early (the call graph: Graphviz then runs meanwhile)."""
    return {n: _Begun(n, ctx) for n in names if get_starter(n) is not None}


def _render_many(
    names: list[str],
    ctx: RenderContext,
    out_dir: Path,
    before_html: Callable[[], None] | None = None,
    begun: dict[str, _Begun] | None = None,
    progress: Progress | None = None,
    out: dict[str, _Outcome] | None = None,
) -> dict[str, _Outcome]:
    """Render ``names`` in order, those with a starter begun first so they overlap the rest;
    outcomes go into ``out`` (as they come: ``before_html`` sees the earlier ones)."""
    begun = _begin(names, ctx) if begun is None else begun
    out = {} if out is None else out
    for name in names:
        if name in REPORTS and before_html is not None:
            before_html()  # the reports link to and embed the others' files: those must be in
        out[name] = _render_one(name, ctx, out_dir, begun.get(name))
        _say_took(name, out[name], progress)
    return out


def _say_took(name: str, outcome: _Outcome, progress: Progress | None) -> None:
    if progress is not None and outcome.took > 2.0:
        progress(f"dynaprof: rendered {name} in {outcome.took:.1f} s")


def _ordered_notes(names: list[str], outcomes: dict[str, _Outcome]) -> list[str]:
    """Renderer notes in renderer order, each once (a starter's notes come at its renderer's turn,
    not when it started)."""
    out: list[str] = []
    for name in names:
        if name in outcomes:
            out.extend(n for n in outcomes[name].notes if n not in out)
    return out


def derived_data(session: Session) -> tuple[object, ...]:
    """The derived data ``apply_attribution`` stores (run and per frame): equal before and after
    it means the stored session needs no rewrite."""
    return session.attribution, session.axes, [(f.attribution, f.axes) for f in session.frames]


def write_session_only(session: Session, out_dir: Path) -> list[Path]:
    """Derive (``apply_attribution``) and write session.json alone, as :func:`write_run_folder`
    would store it (``dynaprof.profile(render=False)``)."""
    apply_attribution(session)
    return [save_session(session, out_dir)]


def write_run_folder(
    session: Session,
    out_dir: Path,
    options: RenderOptions,
    run_dir: Path | None = None,
    only: list[str] | None = None,
    progress: Progress | None = None,
    stored: bool = False,
) -> tuple[list[Path], list[str]]:
    """Derive (``apply_attribution``), then write session.json and every output into ``out_dir``;
    a failing renderer is reported, never fatal. Returns the paths written and the notes.

    ``stored``: ``session`` was loaded from ``out_dir``'s session.json, which is then rewritten
    only if the derived data changed (new rules) or the file is of an older schema: re-rendering
    an unchanged session leaves the file as it is. ``progress`` gets one line per slow renderer."""
    with collector_paused():
        return _write(session, out_dir, options, run_dir, only, progress, stored)


def _write(
    session: Session,
    out_dir: Path,
    options: RenderOptions,
    run_dir: Path | None,
    only: list[str] | None,
    progress: Progress | None,
    stored: bool,
) -> tuple[list[Path], list[str]]:
    names = list(only or RENDERERS)
    tables, notes = load_cprofile(session, run_dir or out_dir)
    ctx = RenderContext(session, options, cprofile=tables, made=planned(names))
    before = derived_data(session) if stored and session.schema_version == SCHEMA_VERSION else None
    # derived data, by the current rules: each stack classified once
    apply_attribution(session, ctx.derived.phases, ctx.derived.causes)
    save = before is None or derived_data(session) != before
    outcomes: dict[str, _Outcome] = {}

    def order_notes() -> None:
        """Before the report (which lists the notes), and after all: in renderer order."""
        ctx.notes[:] = _ordered_notes(names, outcomes)

    try:
        begun = _begin(names, ctx)  # before saving: Graphviz runs while session.json is written
        written = [save_session(session, out_dir)] if save else []
        _render_many(names, ctx, out_dir, order_notes, begun, progress, outcomes)
        order_notes()
        for name in names:  # the compressed exports, made meanwhile in the background
            outcomes[name].flush(name, out_dir)
    finally:
        for outcome in outcomes.values():  # leaving on an error: let the background threads finish
            for content in outcome.pending.values():
                try:
                    content.result()
                except Exception:
                    pass
    for name in names:
        written += outcomes[name].written
    _drop_other_forms(out_dir, written)
    failures = [o.failure for n in names if (o := outcomes[n]).failure is not None]
    return written, notes + failures + _ordered_notes(names, outcomes)


def _drop_other_forms(out_dir: Path, written: list[Path]) -> None:
    """A re-render in another ``--exports`` form removes the now stale form of each export."""
    for path in written:
        if path.parent != out_dir:
            continue
        plain = path.name.removesuffix(".gz")
        if plain in _EXPORTS:
            other = out_dir / (plain if path.name.endswith(".gz") else plain + ".gz")
            if other not in written:
                try:
                    other.unlink(missing_ok=True)
                except OSError:
                    pass
