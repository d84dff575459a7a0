"""A sweep folder (``dynaprof sweep``, ``dynaprof.sweep()``): what a point's run keeps of its
session, and the files written beside the points once they ran. Nothing here prints."""

from __future__ import annotations

from pathlib import Path

from dynaprof.analysis.attribution import apply_attribution
from dynaprof.analysis.cause_table import cause_files
from dynaprof.analysis.growth import Growth, growth
from dynaprof.analysis.sweep_measures import run_counts, run_measures
from dynaprof.model.session import Session
from dynaprof.model.store import SESSION_FILE, load_session
from dynaprof.model.sweep import GrowthFit, Sweep, save_sweep
from dynaprof.render.sweep_report import render_sweep
from dynaprof.run_folder.write_files import write_files


def measured(session: Session) -> tuple[dict[str, float], dict[str, int]]:
    """A point run's measures and counts, its attribution derived by today's rules."""
    apply_attribution(session)
    return run_measures(session), run_counts(session)


def read_run(run_dir: Path) -> tuple[dict[str, float], dict[str, int], str | None]:
    """A point run's measures, counts and torch version, from its session.json."""
    session = load_session(run_dir)
    measures, counts = measured(session)
    return measures, counts, session.run.torch_version


def largest_point_files(sweep: Sweep, out: Path) -> dict[str, str]:
    """Each cause's file in the largest point's runs (the growth rolls causes up at that point)."""
    done = [p for p in sweep.points if any(r.ok for r in p.runs)]
    if not done:
        return {}
    files: dict[str, str] = {}
    for r in max(done, key=lambda p: p.x).runs:
        path = out / r.run_dir
        if r.ok and (path / SESSION_FILE).is_file():
            session = load_session(path)
            apply_attribution(session)
            files |= cause_files(session)
    return dict(sorted(files.items()))


def finish_sweep(sweep: Sweep, out: Path) -> tuple[Growth, list[Path]]:
    """Fit, then write sweep.json (with its fits), summary.md, report.html and growth.svg."""
    sweep.points = [p for p in sweep.points if p.runs]
    sweep.cause_files = largest_point_files(sweep, out)
    g = growth(sweep)
    sweep.fits = [GrowthFit(f.measure, f.kind, f.exponent, f.low, f.high, f.residual, len(f.medians),
                            list(f.absent_at)) for f in g.fits]
    written = [save_sweep(sweep, out), *write_files(out, dict(render_sweep(sweep, g)))]
    return g, written
