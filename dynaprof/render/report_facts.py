"""What every report says, before it is formatted: the facts ``summary.md`` (``render.markdown``),
``report.html`` (``render.report_html``) and ``compare.md`` / ``compare.html``
(``render.compare_report``) each show, as plain text and numbers: frames slowest first and how a
frame is named and timed, restart and graph-break reasons, the sampler line, the cause table's
labels and notes, the parametrized properties and the traced functions' times.

Nothing here escapes or lays out: each page escapes for its own format.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from dynaprof import fmt
from dynaprof.analysis.cause_table import OTHER_CAUSES, CauseTable
from dynaprof.analysis.derived import Derived, FunctionTime
from dynaprof.model.session import CompiledFrame, RestartReason, Samples, Session, display_id


def traced_function_times(session: Session, derived: Derived | None = None) -> list[FunctionTime]:
    """Self and inclusive sampled seconds per traced user function, heaviest self time first (the
    Markdown summary and the HTML report both list them: ``Derived.traced_times``)."""
    return list((derived or Derived(session)).traced_times)


@dataclass(frozen=True)
class PropertyRow:
    label: str
    count: int
    instances: int
    seconds: float


def parametrized_properties(session: Session) -> list[PropertyRow]:
    """Parametrized properties per label (summed over frames), heaviest first."""
    acc: dict[str, list[float]] = {}
    for f in session.frames:
        for p in f.properties:
            if p.parametrized:
                row = acc.setdefault(p.label, [0, 0, 0.0])
                row[0] += p.count
                row[1] += p.instances
                row[2] += p.seconds
    rows = [PropertyRow(k, int(v[0]), int(v[1]), v[2]) for k, v in acc.items()]
    return sorted(rows, key=lambda r: (-r.seconds, r.label))


def frames_by_time(session: Session) -> list[CompiledFrame]:
    """Frames slowest first (unknown times last), then in compile order."""
    return sorted(session.frames, key=lambda f: (f.compile_time_s is None, -(f.compile_time_s or 0.0), f.start_s))


def frame_id(f: CompiledFrame) -> str:
    """The compile id as every output shows it (``model.session.display_id``): ``0/0``, ``1/2_1``
    after restarts, `` gen 1`` after a reset."""
    return display_id(f)


def frame_time(f: CompiledFrame) -> str:
    return fmt.seconds(f.compile_time_s) + ("" if f.status == "ok" else f" ({f.status})")


def restart_reasons(session: Session) -> list[tuple[str, int | None, list[str]]]:
    """(reason in words with where torch raised it, restarts it caused, compile ids), most first.
    The count is None (unknown) where torch's set of reasons cannot tell (``RestartReason``)."""
    seen: dict[str, list[int | None]] = {}
    ids: dict[str, list[str]] = {}
    for f in session.frames:
        for r in f.restart_details:
            text = restart_detail_text(r, counts=False)
            seen.setdefault(text, []).append(r.count)
            ids.setdefault(text, []).append(display_id(f))
    out = [(r, None if None in n else sum(c or 0 for c in n), ids[r]) for r, n in seen.items()]
    return sorted(out, key=lambda t: (t[1] is None, -(t[1] or 0), t[0]))


def restart_detail_text(r: RestartReason, counts: bool = True) -> str:
    """``reason in words (at file.py:12), 3 restarts`` (the count: ``?`` where torch cannot say)."""
    text = r.text + (f" (at {fmt.location(r.filename, r.lineno)})" if r.filename else "")
    if counts:
        n = r.count
        text += f", {fmt.count(n)} restart{'' if n == 1 else 's'}"
    return text


def graph_break_reasons(session: Session) -> list[tuple[str, str, int]]:
    """(reason, user location, count), most frequent first."""
    c: Counter[tuple[str, str]] = Counter()
    for f in session.frames:
        for gb in f.graph_break_reasons:
            loc = fmt.location(gb.filename, gb.lineno) if gb.filename else ""
            c[(" ".join(gb.reason.split()), loc)] += 1
    return [(r, loc, n) for (r, loc), n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]


def asked_rate(s: Samples) -> str:
    """The rate asked for, and what the default rate adapted to where a sample cost too much."""
    if len(s.adapted_hz) == 2:
        lo, last = s.adapted_hz
        used = f"{lo:,.0f} Hz" if round(lo) == round(last) else f"{lo:,.0f}-{last:,.0f} Hz"
        return f"adapted to {used} from the requested {s.requested_hz:,.0f} Hz"
    return f"requested {s.requested_hz:,.0f} Hz"


def sampler_text(session: Session) -> str:
    s = session.samples
    if s is None:
        return f"{session.capture.sampler} (no samples)"
    rate = f"{s.achieved_hz:,.0f} Hz" if s.achieved_hz is not None else "? Hz"
    req = f" ({asked_rate(s)})" if s.requested_hz else ""
    err = f", {s.errors:,} errors" if s.errors else ""
    return f"{s.source} at {rate}{req}, {s.count:,} samples over {fmt.seconds(s.seconds)}{err}{sampler_cost(session)}"


def sampler_cost(session: Session) -> str:
    """What sampling cost the compile, as the sampler measured it (empty where it could not)."""
    s = session.samples
    total = session.total_compile_s
    if s is None or s.own_s is None or s.floor_s is None or s.cost_s is None or total <= 0:
        return ""
    return (f"; sampling cost the compile about {fmt.seconds(s.cost_s)} ({100 * s.cost_s / total:.1f}%: "
            f"{s.signal_samples:,} timer signals at {s.floor_s * 1e6:,.0f} us each (measured once per boot) "
            f"and {fmt.seconds(s.own_s)} in the samples)")


def sampling_note(s: Session) -> str:
    """Samples beyond their frame's compile time, scaled down to it: why the table may not add up
    to the samples taken (empty when none were)."""
    total = s.total_compile_s
    sampled = s.samples.seconds if s.samples else 0.0
    clipped = sum(f.sampled_clipped_s for f in s.frames)
    over = max(clipped, sampled - total)
    if over < 0.0005:  # under the table's rounding
        return ""
    return (f"Samples beyond their frame's compile time ({fmt.seconds(over)}) were scaled down to it: torch's "
            "compile timer leaves out some of its own work around it (logging, recording metrics), which the "
            "sampler sees.")


def cause_label(cause: str, folded: int = 0) -> str:
    """A cause row's text (plain: escape it for the format): ``other causes (3)`` for the fold."""
    return f"{OTHER_CAUSES} ({folded:,})" if cause == OTHER_CAUSES else cause


def cause_table_notes(table: CauseTable) -> list[str]:
    """What the columns hold and how restart waste is counted (plain text)."""
    notes = [f"{c.label} = {c.description}" for c in table.columns if len(c.phases) > 1]
    notes = ["Every sampled second has one cause (row) and one phase (column); causes under 1% are folded "
             "into \"other causes\"" + (f"; {'; '.join(notes)}" if notes else "") + "."]
    if table.restart_waste > 0:
        notes.append(f"Restart waste: {fmt.seconds(table.restart_waste)} of the seconds above were in attempts that "
                     "restarts threw away (counted in their cause and phase too).")
    return notes + [n[0].upper() + n[1:] + "." for n in table.notes]
