"""What a sweep keeps of each point's run (``model.sweep.PointRun``): its compile time, the cause x
phase table's rows (causes) and column totals (phase groups) and its restart waste, in seconds, and
its exact counts. Pure: reads a session whose attribution was derived (``apply_attribution``)."""

from __future__ import annotations

from dynaprof.analysis.budgets import recompiles
from dynaprof.analysis.cause_table import cause_table
from dynaprof.analysis.compare import run_metrics
from dynaprof.fmt import stored_s
from dynaprof.model.session import CAUSE_COLLECTOR, Session
from dynaprof.model.sweep import CAUSE_PREFIX, GROUP_PREFIX, RESTART_WASTE, TOTAL

#: the phase group that is the collector's alone (``CAUSE_COLLECTOR`` is its only cause)
COLLECTOR_GROUP = "garbage_collection"
#: ``COUNT_LABELS`` keys read from ``analysis.compare.run_metrics`` (the counts ``compare`` shows)
_METRIC_COUNTS = ("guards", "fx_nodes", "inlined_calls", "restarts", "kernels", "aot_ops", "instructions")


def run_measures(session: Session) -> dict[str, float]:
    """Measure key -> seconds, only the measures present (> 0) in this run: absent is never 0."""
    out: dict[str, float] = {}
    if session.total_compile_s > 0:
        out[TOTAL] = stored_s(session.total_compile_s)
    table = cause_table(session.axes, session.total_compile_s or None, max_rows=1_000_000, min_share=0.0)
    if table is None:
        return out
    for row in table.rows:
        if row.total > 0:
            out[CAUSE_PREFIX + row.cause] = stored_s(row.total)
    for group, secs in table.totals.cells.items():
        # the collector is a cause and a phase of its own, the same seconds: one row, the cause's
        if secs > 0 and not (group == COLLECTOR_GROUP and CAUSE_PREFIX + CAUSE_COLLECTOR in out):
            out[GROUP_PREFIX + group] = stored_s(secs)
    if table.restart_waste > 0:
        out[RESTART_WASTE] = stored_s(table.restart_waste)
    return out


def run_counts(session: Session) -> dict[str, int]:
    """``COUNT_LABELS`` key -> exact count over the run's frames; a count its torch did not expose
    (every frame's value unknown) is left out."""
    metrics = run_metrics(session)
    out = {k: int(v) for k in _METRIC_COUNTS if (v := metrics.get(k)) is not None}
    out["recompiles"] = recompiles(session)
    discarded = [f.inlined_calls_discarded for f in session.frames if f.inlined_calls_discarded is not None]
    if discarded:
        out["inlined_calls_discarded"] = sum(discarded)
        if "inlined_calls" in out:  # all the inlining Dynamo tracing did, restarts' included
            out["inlined_calls_all"] = out["inlined_calls"] + out["inlined_calls_discarded"]
    return dict(sorted(out.items()))
