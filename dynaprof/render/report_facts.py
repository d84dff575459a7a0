"""What every report says, before it is formatted: the facts the terminal summary
(``render.terminal``), ``summary.md`` (``render.markdown``), ``report.html``
(``render.report_html``) and ``compare.md`` / ``compare.html`` (``render.compare_report``) each
show, as plain text and numbers: frames slowest first and how a frame is named and timed, the
per-compile numbers of the frames tables (``FRAME_FACTS``), restart and graph-break reasons, the
sampler line, the cause table's labels, cells and notes, the parametrized properties and the
traced functions' times.

Nothing here escapes or lays out: each output escapes for its own format and places the text.
A new per-compile fact is one ``FrameFact`` in ``FRAME_FACTS`` (``docs/architecture.md``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dynaprof import fmt
from dynaprof.analysis.cause_table import OTHER_CAUSES, CauseTable
from dynaprof.analysis.derived import Derived, FunctionTime
from dynaprof.model.session import (
    KIND_LABELS,
    CompiledFrame,
    RestartReason,
    Samples,
    Session,
    display_id,
    display_name,
)


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


def frame_where(f: CompiledFrame) -> str:
    """``forward (model.py:12)``: the frame's function and where it is."""
    name, filename, lineno = display_name(f)
    return f"{name} ({fmt.location(filename, lineno)})"


#: the outputs a ``FrameFact`` can be shown in: their frames tables
TERMINAL, MARKDOWN, HTML = "terminal", "markdown", "html"
EVERY_OUTPUT = frozenset({TERMINAL, MARKDOWN, HTML})


@dataclass(frozen=True)
class FrameFact:
    """One per-compile number of the frames tables, in the words and numbers every output shows:
    its header (``short``: the terminal's, where columns are dear), its value and its text."""

    key: str
    header: str
    short: str
    value: Callable[[CompiledFrame], int | float | None]
    #: a time (``fmt.seconds``) rather than a count (``fmt.count``)
    seconds: bool = False
    #: the frames tables that show it
    outputs: frozenset[str] = EVERY_OUTPUT
    #: shown only where some frame has it (``--time-calls``' columns)
    optional: bool = False

    def text(self, f: CompiledFrame) -> str:
        v = self.value(f)
        return fmt.seconds(v) if self.seconds else fmt.count(None if v is None else int(v))

    def cell(self, f: CompiledFrame) -> tuple[str, float | None]:
        """The text and the number a sortable table orders by."""
        v = self.value(f)
        return self.text(f), None if v is None else float(v)


#: the frames tables' per-compile columns after the compile id, the frame and its time, in order
FRAME_FACTS: tuple[FrameFact, ...] = (
    FrameFact("calls", "calls", "calls", lambda f: f.calls),
    FrameFact("call_time_median", "run time/call (median)", "run/call", lambda f: f.call_time_median_s, True,
              frozenset({MARKDOWN, HTML}), optional=True),
    FrameFact("call_time_total", "run time (all calls)", "run time", lambda f: f.call_time_total_s, True,
              frozenset({MARKDOWN, HTML}), optional=True),
    FrameFact("restarts", "restarts", "restarts", lambda f: f.restarts),
    FrameFact("graph_breaks", "graph breaks", "breaks", lambda f: f.graph_breaks),
    FrameFact("guards", "guards", "guards", lambda f: f.guard_count),
    FrameFact("inlined", "inlined calls", "inlined", lambda f: f.inlined_calls, outputs=frozenset({TERMINAL, HTML})),
    # Inductor's two counts of kernels (docs/causes.md, "Two counts called kernels"): every body its
    # codegen made, and the distinct kernels, what builds cost (the one the terminal has room for)
    FrameFact("kernels_generated", "kernels generated", "generated", lambda f: f.inductor_kernels,
              outputs=frozenset({MARKDOWN, HTML}), optional=True),
    FrameFact("kernels_defined", "kernels defined", "kernels", lambda f: f.kernels_defined, optional=True),
    FrameFact("graph_ops", "graph ops", "graph ops", lambda f: f.graph_op_count, outputs=frozenset({HTML})),
)


def frame_facts(output: str, frames: Sequence[CompiledFrame]) -> list[FrameFact]:
    """The ``FRAME_FACTS`` the frames table of ``output`` shows for ``frames``."""
    return [c for c in FRAME_FACTS if output in c.outputs
            and (not c.optional or any(c.value(f) is not None for f in frames))]


def failure_text(f: CompiledFrame) -> str:
    """``0/0 BackendCompilerFailed at model.py:42: reason`` (the reason on one line)."""
    where = f" at {fmt.location(f.fail_filename, f.fail_lineno)}" if f.fail_filename else ""
    return f"{display_id(f)} {f.fail_type or '?'}{where}: {fmt.one_line(f.fail_reason or '', 120)}"


def compile_by_kind_text(session: Session) -> str:
    """``forward 1.2 s (60%), backward 0.8 s (40%)``; empty where every compile is a forward one."""
    kinds, total = session.compile_by_kind(), session.total_compile_s
    if not set(kinds) - {"forward"}:
        return ""
    return ", ".join(f"{KIND_LABELS.get(k, k)} {fmt.seconds(v)} ({fmt.pct(v, total)})" for k, v in kinds.items())


def samples_text(s: Samples) -> str:
    """``12,345 samples at 998 Hz``."""
    return f"{s.count:,} samples at {f'{s.achieved_hz:.0f} Hz' if s.achieved_hz else '?'}"


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


def cause_cell(seconds: float) -> str:
    """A cause table's cell: its seconds, empty where none."""
    return fmt.seconds(seconds) if seconds > 0 else ""


def restart_waste_text(table: CauseTable) -> str:
    """The terminal's line under the cause table: what restarts threw away, and the cause that lost
    most (empty where none)."""
    if table.restart_waste <= 0:
        return ""
    worst = max(((r.cause, r.wasted) for r in table.rows if r.wasted > 0), key=lambda kv: kv[1], default=None)
    text = f"restart waste: {fmt.seconds(table.restart_waste)} of this in attempts that restarts threw away"
    return text + (f" (most: {worst[0]})" if worst else "")


def parametrized_text(n: int, seconds: float, items: Sequence[tuple[str, int]], shown: int = 6) -> str:
    """``parametrized properties (64, measured exactly): Linear.weight x32, ...; 1.2 s``."""
    props = ", ".join(f"{label} x{k}" for label, k in items[:shown])
    return f"parametrized {'property' if n == 1 else 'properties'} ({n:,}, measured exactly): {props}; " \
        f"{fmt.seconds(seconds)}"


def cause_label(cause: str, merged: int = 0) -> str:
    """A cause row's text (plain: escape it for the format): ``other causes (3)`` for the merged row."""
    return f"{OTHER_CAUSES} ({merged:,})" if cause == OTHER_CAUSES else cause


def cause_table_notes(table: CauseTable) -> list[str]:
    """What the columns hold and how restart waste is counted (plain text)."""
    notes = [f"{c.label} = {c.description}" for c in table.columns if len(c.phases) > 1]
    notes = ["Every sampled second has one cause (row) and one phase (column); causes under 1% are merged "
             "into \"other causes\"" + (f"; {'; '.join(notes)}" if notes else "") + "."]
    if table.restart_waste > 0:
        notes.append(f"Restart waste: {fmt.seconds(table.restart_waste)} of the seconds above were in attempts that "
                     "restarts threw away (counted in their cause and phase too).")
    return notes + [n[0].upper() + n[1:] + "." for n in table.notes]
