"""A suite folder (``dynaprof suite``): what a run's record keeps of its session, and the files
written beside the runs (suite.json, summary.md, report.html, causes.svg). Nothing here prints."""

from __future__ import annotations

from pathlib import Path

from dynaprof.analysis.attribution import apply_attribution
from dynaprof.analysis.suite_facts import rolled_causes, run_facts
from dynaprof.errors import DynaprofError
from dynaprof.model.store import load_session
from dynaprof.model.suite import Suite, SuiteRun, save_suite
from dynaprof.render.suite_report import render_suite
from dynaprof.run_folder.write_files import write_files


def read_suite_run(record: SuiteRun, run_dir: Path) -> str | None:
    """Fill ``record`` from the run folder's session.json (its attribution derived by today's
    rules); its torch version. A folder without a readable session is the record's error."""
    if not (run_dir / "session.json").exists():
        record.error = record.error or "no session.json was written"
        return None
    try:
        session = load_session(run_dir)
    except DynaprofError as e:
        record.error = record.error or f"its session.json cannot be read: {e.message}"
        return None
    apply_attribution(session)
    record.measures, record.counts, record.kinds = run_facts(session)
    record.causes = rolled_causes(session)
    return session.run.torch_version


def finish_suite(suite: Suite, out: Path) -> list[Path]:
    """Write suite.json and the suite's reports into ``out``."""
    return [save_suite(suite, out), *write_files(out, dict(render_suite(suite)))]
