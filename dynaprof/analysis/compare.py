"""Comparing runs seen from analysis (``dynaprof compare BASE NEW``): what changed, by how much, and why.

Frames are matched by code location (file basename, function name, first line) and, among
frames at the same location (recompiles, resets), by order of occurrence; the rest are reported
as only in BASE or only in NEW. Deltas are NEW minus BASE. With ``normalize`` every time becomes
a share of its own run's total compile time, so runs of different length (another machine,
another sampling rate) compare by where the time went rather than how much there was.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dynaprof import fmt
from dynaprof.analysis.cause_table import CAUSE_ROWS, MIN_SHARE, OTHER_CAUSES, cause_files
from dynaprof.analysis.noise import DEFAULT_MARGIN, Verdict, block_note, noise_verdicts
from dynaprof.analysis.rollup import roll_up
from dynaprof.model.session import (
    CATEGORIES,
    CATEGORY_LABELS,
    CAUSE_PARAMETRIZATION,
    PHASE_LABELS,
    PHASES,
    Axes,
    CompiledFrame,
    Session,
    compile_by_kind,
)

#: per-frame and run-level metrics; ``*_s`` are seconds (shares of compile when normalizing)
METRICS: dict[str, str] = {
    "compile_s": "compile time",
    "forward_s": "forward compile time",
    "backward_s": "backward compile time (incl. compiled autograd)",
    "frames": "compiled frames",
    "calls": "calls",  # runs of the compiled code (run level: the sum of the entries with a count)
    "restarts": "restarts",
    "guards": "guards",
    "inlined_calls": "inlined calls",
    "graph_breaks": "graph breaks",
    "instructions": "bytecode instructions traced (incl. inlined)",
    "fx_nodes": "FX graph nodes",
    "fx_ops": "FX graph ops",
    "aot_ops": "FX ops after AOT autograd (the backend compiler's input)",
    "ir_nodes": "Inductor IR nodes",
    "kernels": "kernels generated",
    "python_calls": "Python calls while compiling (cProfile)",
    "cpu_instructions": "CPU instructions retired while compiling (hardware counter; ? where the machine has none)",
    "parametrization_s": "parametrized property tracing (exact)",
    "sampled_s": "sampled time",
}
#: exact work counts (not timed, so not noisy): their change is shown as an exact difference
WORK_COUNTS = frozenset({"instructions", "fx_nodes", "fx_ops", "aot_ops", "ir_nodes", "kernels", "python_calls",
                         "cpu_instructions"})
#: the per-compile work counts compared frame by frame (``CompiledFrame`` fields), with their labels
FRAME_WORK: dict[str, str] = {
    "ir_count": "instructions", "inlined_calls": "inlined calls", "graph_node_count": "FX nodes",
    "graph_op_count": "FX ops", "aot_graph_ops": "ops after AOT", "inductor_ir_nodes": "IR nodes",
    "inductor_kernels": "kernels", "python_calls": "Python calls", "guard_count": "guards", "restarts": "restarts",
}
#: the run-level counts that are exact (the same work counts the same every run), so any change is a real
#: one and leads the verdict, before the noisy seconds (``exact_changes``); cpu_instructions is a
#: hardware counter and python_calls needs --cprofile: neither is in
EXACT_COUNTS = ("fx_nodes", "fx_ops", "aot_ops", "ir_nodes", "kernels", "instructions", "guards")
FRAME_METRICS = ("compile_s", "calls", "restarts", "guards", "inlined_calls", "graph_breaks", "parametrization_s")

FrameKey = tuple[str, str, int]


@dataclass(frozen=True)
class Change:
    base: float | None
    new: float | None

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.new is None else self.new - self.base

    @property
    def ratio(self) -> float | None:
        if self.base is None or self.new is None or self.base == 0:
            return None
        return self.new / self.base

    @property
    def changed(self) -> bool:
        d = self.delta
        return (self.base is None) != (self.new is None) or (d is not None and abs(d) > 1e-12)


@dataclass
class FramePair:
    key: FrameKey
    occurrence: int  # 0 for the first frame at this location, 1 for the next...
    base: CompiledFrame
    new: CompiledFrame
    metrics: dict[str, Change]
    categories: dict[str, Change]


@dataclass
class Comparison:
    normalize: bool
    totals: dict[str, Change]
    categories: dict[str, Change]  # attribution seconds (shares when normalizing)
    pairs: list[FramePair] = field(default_factory=list)
    only_base: list[CompiledFrame] = field(default_factory=list)
    only_new: list[CompiledFrame] = field(default_factory=list)
    headline: str = ""
    #: cause -> seconds (shares when normalizing), from ``axes.causes``; None when a side has no axes
    causes: dict[str, Change] | None = None
    #: cause -> phase -> seconds (shares), from ``axes.matrix``
    cause_phases: dict[str, dict[str, Change]] = field(default_factory=dict)
    #: why the cause view is missing (empty when it is there)
    cause_note: str = ""
    #: repeated runs (``--repeat N``) on a side: the total's and each phase's change with its 95%
    #: interval and noise verdict (``analysis.noise``); empty otherwise
    noise: list[Verdict] = field(default_factory=list)
    #: the practical margin of the noise verdicts (a fraction)
    margin: float = DEFAULT_MARGIN
    #: why the runs' order may bias the verdict (all of a side's runs came first); empty otherwise
    order_note: str = ""


def frame_key(f: CompiledFrame) -> FrameKey:
    """Frames match by location and name; a backward compile only another backward compile."""
    name = f.name if f.kind == "forward" else f"{f.name} [{f.kind}]"
    return (f.filename.replace("\\", "/").rsplit("/", 1)[-1], name, f.lineno)


def parametrization_seconds(frames: list[CompiledFrame]) -> float:
    return sum(p.seconds for f in frames for p in f.properties if p.parametrized)


def _sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def run_metrics(s: Session, normalize: bool = False) -> dict[str, float | None]:
    total = s.total_compile_s
    scale = _scale(s, normalize)
    kinds = compile_by_kind(s.frames)
    return {
        "compile_s": total,  # the normalizer itself stays in seconds
        "forward_s": kinds.get("forward", 0.0) * scale,
        # unknown (None, shown as ?) where this torch could not say: no hook for it was installed
        "backward_s": ((kinds.get("backward", 0.0) + kinds.get("compiled_autograd", 0.0)) * scale
                       if "backward" in kinds or "compiled_autograd" in kinds or _knows(s, "phases") else None),
        "frames": float(len(s.frames)),
        "calls": _f(_sum([f.calls for f in s.frames])),
        "restarts": float(sum(f.restarts for f in s.frames)),
        "guards": _f(_sum([f.guard_count for f in s.frames])),
        "inlined_calls": _f(_sum([f.inlined_calls for f in s.frames])),
        "graph_breaks": _f(s.graph_breaks),
        "instructions": _f(_sum([f.ir_count for f in s.frames])),
        "fx_nodes": _f(_sum([f.graph_node_count for f in s.frames])),
        "fx_ops": _f(_sum([f.graph_op_count for f in s.frames])),
        "aot_ops": _f(_sum([f.aot_graph_ops for f in s.frames])),
        "ir_nodes": _f(_sum([f.inductor_ir_nodes for f in s.frames])),
        "kernels": _f(_sum([f.inductor_kernels for f in s.frames])),
        "python_calls": _f(_sum([f.python_calls for f in s.frames])),
        "cpu_instructions": _f(_sum([f.cpu_instructions for f in s.frames])),
        "parametrization_s": parametrization_seconds(s.frames) * scale if _knows(s, "properties") else None,
        "sampled_s": (s.samples.seconds * scale) if s.samples is not None else None,
    }


def _knows(s: Session, hook: str) -> bool:
    """Whether the capture could see what ``hook`` records (sessions without a hook list: assumed)."""
    return s.capture.source != "live" or not s.capture.hooks or hook in s.capture.hooks


def _f(v: int | None) -> float | None:
    return None if v is None else float(v)


def frame_metrics(f: CompiledFrame, scale: float) -> dict[str, float | None]:
    return {
        "compile_s": None if f.compile_time_s is None else f.compile_time_s * scale,
        "calls": _f(f.calls),  # runs of the entry's compiled code (a count: never normalized)
        "restarts": float(f.restarts),
        "guards": _f(f.guard_count),
        "inlined_calls": _f(f.inlined_calls),
        "graph_breaks": _f(f.graph_breaks),
        "parametrization_s": parametrization_seconds([f]) * scale,
    }


def _scale(s: Session, normalize: bool) -> float:
    total = s.total_compile_s
    return (1.0 / total if total > 0 else 0.0) if normalize else 1.0


def _categories(base: dict[str, float], new: dict[str, float], bs: float, ns: float,
                sampled: tuple[bool, bool]) -> dict[str, Change]:
    keys = [c for c in CATEGORIES if c in base or c in new] + sorted(set(base) | set(new) - set(CATEGORIES))
    return {k: Change(base.get(k, 0.0) * bs if sampled[0] else None, new.get(k, 0.0) * ns if sampled[1] else None)
            for k in keys}


def _cause_view(base: Axes | None, new: Axes | None, bs: float, ns: float,
                files: dict[str, str] | None = None) -> tuple[
        dict[str, Change] | None, dict[str, dict[str, Change]], str]:
    """Per-cause and per-cause-per-phase changes, or None with the reason when a side lacks axes.
    With ``files``, small causes roll up as the cause table rolls them (``rollup``), by the larger
    side's seconds, so both reports name the same rows."""
    if base is None or new is None:
        which = "BASE and NEW have" if base is None and new is None else "BASE has" if base is None else "NEW has"
        return None, {}, (f"the cause view is unavailable: {which} no cause x phase data (no samples, a session "
                          "from an older dynaprof, or a TORCH_TRACE import)")
    keys = sorted(set(base.causes) | set(new.causes), key=lambda k: (-max(base.causes.get(k, 0.0) * bs,
                                                                             new.causes.get(k, 0.0) * ns), k))
    causes = {k: Change(base.causes.get(k, 0.0) * bs, new.causes.get(k, 0.0) * ns) for k in keys}
    phases: dict[str, dict[str, Change]] = {}
    for k in keys:
        row = {}
        for p in [p for p in PHASES if p in base.matrix or p in new.matrix]:
            b, n = base.matrix.get(p, {}).get(k, 0.0) * bs, new.matrix.get(p, {}).get(k, 0.0) * ns
            if b or n:
                row[p] = Change(b, n)
        phases[k] = row
    if files is None:
        return causes, phases, ""
    size = {k: max(abs(c.base or 0.0), abs(c.new or 0.0)) for k, c in causes.items()}
    groups, rest = roll_up(size, files, CAUSE_ROWS, MIN_SHARE)
    rolled = [(g.label, g.members) for g in groups] + ([(OTHER_CAUSES, tuple(rest))] if rest else [])
    return ({label: _sum_changes(causes[m] for m in members) for label, members in rolled},
            {label: _sum_phases([phases[m] for m in members]) for label, members in rolled}, "")


def _sum_changes(changes: Iterable[Change]) -> Change:
    b = n = 0.0
    for c in changes:
        b, n = b + (c.base or 0.0), n + (c.new or 0.0)
    return Change(b, n)


def _sum_phases(rows: list[dict[str, Change]]) -> dict[str, Change]:
    keys = [p for p in PHASES if any(p in r for r in rows)]
    return {p: _sum_changes(r[p] for r in rows if p in r) for p in keys}


def match_frames(base: list[CompiledFrame], new: list[CompiledFrame]) -> tuple[
        list[tuple[FrameKey, int, CompiledFrame, CompiledFrame]], list[CompiledFrame], list[CompiledFrame]]:
    """Pairs (key, occurrence, base, new) in NEW's order, then BASE-only and NEW-only frames."""
    def grouped(frames: list[CompiledFrame]) -> dict[FrameKey, list[CompiledFrame]]:
        out: dict[FrameKey, list[CompiledFrame]] = {}
        for f in sorted(frames, key=lambda f: f.start_s):  # stable: ties keep session order
            out.setdefault(frame_key(f), []).append(f)
        return out

    b, n = grouped(base), grouped(new)
    pairs = []
    only_new: list[CompiledFrame] = []
    for f in sorted(new, key=lambda f: f.start_s):
        group = n[frame_key(f)]
        i = next(j for j, g in enumerate(group) if g is f)
        olds = b.get(frame_key(f), [])
        if i < len(olds):
            pairs.append((frame_key(f), i, olds[i], f))
        else:
            only_new.append(f)
    only_base = [f for k, olds in b.items() for f in olds[len(n.get(k, [])):]]
    only_base.sort(key=lambda f: f.start_s)
    return pairs, only_base, only_new


def compare_sessions(base: Session, new: Session, normalize: bool = False,
                     margin: float = DEFAULT_MARGIN) -> Comparison:
    """BASE against NEW; ``margin`` is the noise verdicts' practical margin (a fraction)."""
    bs, ns = _scale(base, normalize), _scale(new, normalize)
    bm, nm = run_metrics(base, normalize), run_metrics(new, normalize)
    totals = {k: Change(bm[k], nm[k]) for k in METRICS}
    cats = _categories(base.attribution, new.attribution, bs, ns, (base.samples is not None, new.samples is not None))
    matched, only_base, only_new = match_frames(base.frames, new.frames)
    pairs = []
    for key, occ, bf, nf in matched:
        fb, fn = frame_metrics(bf, bs), frame_metrics(nf, ns)
        pairs.append(FramePair(key, occ, bf, nf, {k: Change(fb[k], fn[k]) for k in FRAME_METRICS},
                               _categories(bf.attribution, nf.attribution, bs, ns, (bool(bf.attribution),
                                                                                    bool(nf.attribution)))))
    cmp = Comparison(normalize, totals, cats, pairs, only_base, only_new)
    files = {**cause_files(base), **cause_files(new)}
    cmp.causes, cmp.cause_phases, cmp.cause_note = _cause_view(base.axes, new.axes, bs, ns, files)
    cmp.headline = headline(cmp, base.total_compile_s, new.total_compile_s)
    cmp.noise = noise_verdicts(base, new, margin)
    cmp.margin = margin
    cmp.order_note = block_note(base, new) if cmp.noise else ""
    return cmp


def exact_changes(cmp: Comparison) -> list[tuple[str, Change]]:
    """The exact counts (``EXACT_COUNTS``) known on both sides that differ, in that order."""
    return [(k, c) for k in EXACT_COUNTS if (c := cmp.totals[k]).base is not None and c.new is not None
            and c.changed]


#: how ``exact_text`` names each exact count
EXACT_LABELS = {"fx_nodes": "FX nodes", "fx_ops": "FX ops", "aot_ops": "ops after AOT", "ir_nodes": "IR nodes",
                "kernels": "kernels", "instructions": "bytecode instructions", "guards": "guards"}
#: the verdict word of a change in exact counts
REAL = "real difference"


def exact_text(cmp: Comparison) -> str:
    """``exact counts differ, so the work differs: FX nodes 98 -> 162 (+64), guards 417 -> 2,639
    (+2,222)``; empty when every known count is the same."""
    moved = exact_changes(cmp)
    if not moved:
        return ""
    return "exact counts differ, so the work differs (no margin: a count has no noise): " + ", ".join(
        f"{EXACT_LABELS[k]} {value(k, c.base, False)} -> {value(k, c.new, False)} "
        f"({value(k, c.delta, False, True)})" for k, c in moved)


def verdict_lines(cmp: Comparison) -> list[tuple[str, str]]:
    """(verdict word, sentence) in the order a reader needs them: a change in exact counts first
    (a real difference whatever the seconds say), then the total compile time's noise verdict,
    then the block-order note (word ``note``)."""
    out = []
    if text := exact_text(cmp):
        out.append((REAL, text))
    if cmp.noise:
        out.append((cmp.noise[0].verdict, cmp.noise[0].text()))
    if cmp.order_note:
        out.append(("note", cmp.order_note))
    return out


# ---------------------------------------------------------------------------------------------
# sentences


def seconds(s: float | None, sign: bool = False) -> str:
    """``0.30 s``, ``+0.84 s``, ``12.3 s``, ``4.5 ms``: two decimals where a PR reader wants them."""
    return fmt.duration(s, "compare", sign)


def share(v: float | None, sign: bool = False) -> str:
    if v is None:
        return "?"
    return f"{100 * v:+.0f} pts" if sign else f"{100 * v:.0f}%"


def ratio(c: Change) -> str:
    r = c.ratio
    if r is None:
        return "new" if c.base == 0 and c.new else ""
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x" if r >= 1 else f"{r:.2f}x"


def value(metric: str, v: float | None, normalize: bool, sign: bool = False) -> str:
    """A metric's value (or delta) for people."""
    if metric.endswith("_s"):
        return share(v, sign) if normalize else seconds(v, sign)
    if v is None:
        return "?"
    return f"{v:+,.0f}" if sign else f"{v:,.0f}"


def delta_text(metric: str, c: Change, normalize: bool) -> str:
    """``+0.90 s, 4.0x`` (seconds: delta and ratio; counts: the ratio, else the delta)."""
    if not c.changed:
        return "no change"
    if metric in WORK_COUNTS and c.delta is not None:
        return value(metric, c.delta, normalize, True)  # exact: the difference says it
    seconds_like = metric.endswith("_s")
    extra = [value(metric, c.delta, normalize, True)] if c.delta is not None else []
    r = ratio(c) if c.new else ""  # "0.00x" says less than the delta
    if r and not (normalize and seconds_like) and (seconds_like or c.base):
        extra = [*extra, r] if seconds_like else [r]  # counts: "6.3x" says it, "+1" when from zero
    return ", ".join(extra)


def change_text(metric: str, c: Change, normalize: bool) -> str:
    """``0.30 s -> 1.20 s (+0.90 s, 4.0x)``."""
    b, n = value(metric, c.base, normalize), value(metric, c.new, normalize)
    if not c.changed:
        return f"{n} (no change)"
    extra = delta_text(metric, c, normalize)
    return f"{b} -> {n}" + (f" ({extra})" if extra else "")


def driver(cmp: Comparison, total_delta: float) -> tuple[str, Change] | None:
    """The phase group that moved most in the direction of the total (or most at all)."""
    moved = [(k, c) for k, c in cmp.categories.items() if c.delta is not None and abs(c.delta) > 1e-12]
    if not moved:
        return None
    if cmp.normalize:
        return max(moved, key=lambda kc: abs(kc[1].delta or 0.0))
    same = [kc for kc in moved if (kc[1].delta or 0.0) * total_delta > 0] or moved
    return max(same, key=lambda kc: abs(kc[1].delta or 0.0))


def cause_driver(cmp: Comparison, total_delta: float) -> tuple[str, Change] | None:
    """The cause that moved most in the direction of the total (or most at all)."""
    moved = [(k, c) for k, c in (cmp.causes or {}).items() if c.delta is not None and abs(c.delta) > 1e-12]
    if not moved:
        return None
    same = [kc for kc in moved if (kc[1].delta or 0.0) * total_delta > 0] if not cmp.normalize else []
    return max(same or moved, key=lambda kc: abs(kc[1].delta or 0.0))


def cause_phase_text(cmp: Comparison, cause: str, limit: int = 3) -> str:
    """``+31.8 s C++/Triton kernel compile, +4.00 s Inductor codegen``: the phases that moved most
    for one cause, in the direction of its own change."""
    c = (cmp.causes or {}).get(cause)
    moved = [(p, ch) for p, ch in cmp.cause_phases.get(cause, {}).items() if abs(ch.delta or 0.0) > 1e-12]
    if c is not None and c.delta:
        moved = [(p, ch) for p, ch in moved if (ch.delta or 0.0) * (c.delta or 0.0) > 0] or moved
    moved.sort(key=lambda pc: (-abs(pc[1].delta or 0.0), pc[0]))
    unit = share if cmp.normalize else seconds
    return ", ".join(f"{unit(ch.delta, True)} {PHASE_LABELS.get(p, p)}" for p, ch in moved[:limit])


def cause_text(cmp: Comparison, cause: str, total_delta: float) -> str:
    """``+43 s parametrization (90% of the growth): +31.8 s kernel compile, ...``."""
    c = (cmp.causes or {})[cause]
    label = "parametrization" if cause == CAUSE_PARAMETRIZATION else cause
    if cmp.normalize:
        text = f"{label} {share(c.base)} -> {share(c.new)} of compile ({share(c.delta, True)})"
    else:
        text = f"{seconds(c.delta, True)} {label}"
        if abs(total_delta) > 1e-12 and (c.delta or 0.0) * total_delta > 0:
            what = "growth" if total_delta > 0 else "reduction"
            text += f" ({100 * (c.delta or 0.0) / total_delta:.0f}% of the {what})"
    how = cause_phase_text(cmp, cause)
    return f"{text}: {how}" if how else text


def headline(cmp: Comparison, base_total: float, new_total: float) -> str:
    compile_change = Change(base_total, new_total)
    parts = [f"compile time {change_text('compile_s', compile_change, False)}"]
    total_delta = compile_change.delta or 0.0
    by_cause = cause_driver(cmp, total_delta)
    if by_cause is not None:
        parts.append(cause_text(cmp, by_cause[0], total_delta))
    top = driver(cmp, total_delta)
    if top is not None:
        cat, c = top
        label = ("by phase: " if by_cause is not None else "") + CATEGORY_LABELS.get(cat, cat)
        if cmp.normalize:
            parts.append(f"{label} {share(c.base)} -> {share(c.new)} of compile ({share(c.delta, True)})")
        elif abs(total_delta) > 1e-12 and (c.delta or 0.0) * total_delta > 0:
            what = "growth" if total_delta > 0 else "reduction"
            pct = 100 * (c.delta or 0.0) / total_delta
            rest = sum(o.delta or 0.0 for k, o in cmp.categories.items() if k != cat)
            why = ""
            if pct > 100.5 and rest * total_delta < 0:  # other phases moved the other way
                why = f": other phases {'shrank' if total_delta > 0 else 'grew'} by {seconds(abs(rest))}"
            parts.append(f"{_lead(label, seconds(c.delta, True))} ({pct:.0f}% of the {what}{why})")
        else:
            parts.append(_lead(label, seconds(c.delta, True)))
    for metric in ("guards", "restarts", "graph_breaks", "frames"):
        c = cmp.totals[metric]
        if c.changed:
            parts.append(f"{METRICS[metric]} {change_text(metric, c, False)}")
    if cmp.only_base or cmp.only_new:
        nb = len(cmp.only_base)
        parts.append(f"{fmt.plural(nb, 'frame')} only in BASE, {len(cmp.only_new):,} only in NEW")
    return "; ".join(parts)


def _lead(label: str, amount: str) -> str:
    """``+0.84 s guard building``, or ``by phase: +0.84 s guard building`` after the cause."""
    prefix = "by phase: "
    return f"{prefix}{amount} {label[len(prefix):]}" if label.startswith(prefix) else f"{amount} {label}"


def cause_changes(cmp: Comparison) -> list[tuple[str, Change]]:
    """Causes that changed, largest absolute change first (empty without the cause view)."""
    moved = [(k, c) for k, c in (cmp.causes or {}).items() if c.changed]
    return sorted(moved, key=lambda kc: (-abs(kc[1].delta or 0.0), kc[0]))


def work_changes(cmp: Comparison) -> list[tuple[FramePair, dict[str, tuple[int | None, int | None]]]]:
    """Matched frames whose exact work counts (``FRAME_WORK``) differ, with (BASE, NEW) per count,
    the frame with the most changed counts first."""
    out = []
    for p in cmp.pairs:
        counts = {k: (getattr(p.base, k), getattr(p.new, k)) for k in FRAME_WORK}
        if any(b != n for b, n in counts.values()):
            out.append((p, counts))
    out.sort(key=lambda pc: -sum(b != n for b, n in pc[1].values()))
    return out


def work_cell(base: int | None, new: int | None) -> str:
    """``120 -> 135 (+15)``, ``120`` when equal, ``?`` parts when unknown."""
    if base == new:
        return fmt.count(base)
    diff = f" ({new - base:+,})" if base is not None and new is not None else ""
    return f"{fmt.count(base)} -> {fmt.count(new)}{diff}"


def biggest_changes(cmp: Comparison) -> list[FramePair]:
    """Matched frames, largest absolute compile-time change first."""
    return sorted(cmp.pairs, key=lambda p: (-abs(p.metrics["compile_s"].delta or 0.0), p.new.start_s))
