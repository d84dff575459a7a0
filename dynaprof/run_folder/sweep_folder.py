"""A sweep folder (``dynaprof sweep``, ``dynaprof.sweep()``): what a point's run keeps of its
session, and the files written beside the points once they ran. Nothing here prints."""

from __future__ import annotations

from pathlib import Path

from dynaprof.analysis.attribution import apply_attribution
from dynaprof.analysis.growth import Growth, growth
from dynaprof.analysis.sweep_measures import run_counts, run_measures
from dynaprof.model.session import Session
from dynaprof.model.store import load_session
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


def finish_sweep(sweep: Sweep, out: Path) -> tuple[Growth, list[Path]]:
    """Fit, then write sweep.json (with its fits), summary.md, report.html and growth.svg."""
    sweep.points = [p for p in sweep.points if p.runs]
    g = growth(sweep)
    sweep.fits = [GrowthFit(f.measure, f.kind, f.exponent, f.low, f.high, f.residual, len(f.medians),
                            list(f.absent_at)) for f in g.fits]
    written = [save_sweep(sweep, out), *write_files(out, dict(render_sweep(sweep, g)))]
    return g, written
