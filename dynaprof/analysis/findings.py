"""Findings: what a compiler engineer should look at first, each as one sentence with seconds.

``findings(session)`` returns them heaviest first; ``hottest(session)`` is the sentence the
terminal summary and the reports lead with. Sentences speak in the user's terms (their
properties, their functions) and always carry seconds and share of compile time.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from dynaprof import fmt
from dynaprof.analysis.causes import phase_seconds
from dynaprof.model.cause_labels import via_classes
from dynaprof.model.reason_words import reason_words
from dynaprof.model.session import (
    CATEGORY_LABELS,
    CAUSE_PARAMETRIZATION,
    CAUSE_TOOLCHAIN,
    CAUSE_UNKNOWN,
    CAUSE_WHOLE_GRAPH,
    PARAMETRIZE_FILE,
    PHASE_LABELS,
    UNNAMED_CAUSES,
    CompiledFrame,
    Session,
    display_id,
    display_name,
)
from dynaprof.model.toolchain import toolchain_seconds


@dataclass(frozen=True)
class Finding:
    key: str
    seconds: float
    text: str
    #: what to try, in one line, where a remedy is known and was measured (docs/causes.md)
    remedy: str | None = None


#: remedies, each applied to a sample by benchmarks/bench_causes.py (figures in docs/causes.md)
REMEDY_FOLD = (
    "for inference, fold the parametrizations in before compiling: torch.nn.utils.parametrize."
    "remove_parametrizations(module, name, leave_parametrized=True) (peft: merge_and_unload())"
)
REMEDY_UNWRAP = (
    "torchao's unwrap_tensor_subclass is meant for torch.export: compile the quantized model as it is"
)
REMEDY_REGISTER_OUTSIDE = (
    "register parametrizations once, outside the compiled forward (peft: merge_and_unload() for inference)"
)
REMEDY_DYNAMIC = (
    "the size changes between calls: torch._dynamo.mark_dynamic(tensor, dim) or torch.compile(..., dynamic=True)"
)


def parametrization_summary(session: Session) -> tuple[int, float, list[tuple[str, int]]] | None:
    """(number of parametrized properties, exact seconds, [(label, instances)]) or None."""
    per_label: Counter[str] = Counter()
    secs = 0.0
    for f in session.frames:
        for p in f.properties:
            if p.parametrized:
                per_label[p.label] += p.instances
                secs += p.seconds
    if not per_label:
        return None
    return sum(per_label.values()), secs, per_label.most_common()


def _labels(items: list[tuple[str, int]], limit: int = 3) -> str:
    shown = ", ".join(f"{label} x{n}" for label, n in items[:limit])
    return shown + (f", +{len(items) - limit} more" if len(items) > limit else "")


def _parametrization(session: Session, total: float) -> Finding | None:
    summary = parametrization_summary(session)
    sampled = session.axes.causes.get(CAUSE_PARAMETRIZATION, 0.0) if session.axes else 0.0
    if summary is None:
        if sampled <= 0:
            return None
        return Finding(
            "parametrization",
            sampled,
            f"parametrization took {fmt.seconds(sampled)} "
            f"({fmt.pct(sampled, total)} of compile, sampled)",
        )
    n, secs, items = summary
    text = (
        f"{n} parametrized propert{'y' if n == 1 else 'ies'} ({_labels(items)}) took {fmt.seconds(secs)}, "
        f"{fmt.pct(secs, total)} of compile: Dynamo traces the @property that "
        f"nn.utils.parametrize injects for each parameter"
    )
    return Finding("parametrization", secs, text)


def _parametrization_name(session: Session) -> str:
    """``parametrization (64 properties via Parametrization: Linear.weight x32, Linear.bias x32)``."""
    summary = parametrization_summary(session)
    vias = sorted({c for label in (session.axes.parametrizations if session.axes else {}) for c in via_classes(label)})
    via = f" via {', '.join(vias[:3])}" if vias else ""
    if summary is None:
        return f"parametrization{' (' + via.strip() + ')' if via else ''}"
    n, _secs, items = summary
    return f"parametrization ({n} propert{'y' if n == 1 else 'ies'}{via}: {_labels(items)})"


def _causes(session: Session, total: float) -> list[Finding]:
    """The biggest cause, with the phases it cost (the verdict on every backend); and
    parametrization when it is not the biggest but costs at least 5% of compile."""
    ax = session.axes
    if ax is None:
        return []
    named = {k: v for k, v in ax.causes.items() if k not in UNNAMED_CAUSES and v > 0}
    if not named:
        return []
    top = max(named.items(), key=lambda kv: kv[1])
    out = [_cause(session, total, *top)]
    param = named.get(CAUSE_PARAMETRIZATION, 0.0)
    if top[0] != CAUSE_PARAMETRIZATION and param >= 0.05 * total:
        out.append(_cause(session, total, CAUSE_PARAMETRIZATION, param))
    return out


def _cause(session: Session, total: float, key: str, secs: float) -> Finding:
    ax = session.axes
    assert ax is not None
    phases = [(p, v) for p, v in phase_seconds(ax, key).items() if v >= 0.03 * secs][:3]
    parts = [f"{fmt.seconds(v)} {PHASE_LABELS.get(p, p)}" for p, v in phases]
    name = _parametrization_name(session) if key == CAUSE_PARAMETRIZATION else key
    head = f"{name} cost {fmt.seconds(secs)} of {fmt.seconds(total)} compile ({fmt.pct(secs, total)})"
    text = head + _phases_said(parts)
    while len(text) > VERDICT_CHARS and len(parts) > 1:  # the verdict stays one short sentence
        parts = parts[:-1]
        text = head + _phases_said(parts)
    wasted = ax.restart_waste.by_cause.get(key, 0.0)
    if wasted > 0.01 * secs:
        text += f"; {fmt.seconds(wasted)} of it in attempts that restarts threw away"
    remedy = None
    if key == CAUSE_PARAMETRIZATION:
        unwrap = any("UnwrapTensorSubclass" in label for label in ax.parametrizations)
        remedy = REMEDY_UNWRAP if unwrap else REMEDY_FOLD
    return Finding(f"cause:{key}", secs, text, remedy)


#: the most characters of the verdict sentence (its remedy, the ``try:`` line, comes apart)
VERDICT_CHARS = 200


def _phases_said(parts: list[str]) -> str:
    if not parts:
        return ""
    return ": " + ((", ".join(parts[:-1]) + " and " + parts[-1]) if len(parts) > 1 else parts[0])


def _no_provenance(session: Session, total: float) -> Finding | None:
    """Backend work on FX nodes that carry no user stack (torch.export graphs, nodes torch makes
    for the whole graph, a torch that renames its internals): said, with its seconds."""
    unknown = session.axes.causes.get(CAUSE_UNKNOWN, 0.0) if session.axes else 0.0
    if unknown < 0.05 * total or unknown <= 0:
        return None
    return Finding(
        "no_provenance",
        unknown * 0.5,
        f"{fmt.seconds(unknown)} ({fmt.pct(unknown, total)} of compile) went to FX nodes without provenance "
        "(no stack_trace or nn_module_stack on the node): their cause is unknown",
    )


def _toolchain(session: Session, total: float) -> Finding | None:
    """The one-time work of a process's first C++ kernel (``toolchain_setup``): a fresh machine or
    cache pays it once, and a plain model that builds no C++ kernel never does."""
    row = session.axes.matrix.get("toolchain_setup", {}) if session.axes else {}
    secs = sum(row.values())
    if secs < 0.5 or secs < 0.05 * total:
        return None
    cause = max(row.items(), key=lambda kv: kv[1])[0]
    shared = cause == CAUSE_TOOLCHAIN
    whose = ("shared by the kernels of several causes" if shared
             else f"counted under {cause}, the only cause whose kernels needed it")
    return Finding(
        "toolchain",
        secs if shared else secs * 0.5,  # shared, it is no cause's: this finding is the only one to say it
        f"the first C++ kernel in this process paid {fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile) of "
        f"one-time toolchain setup (vector-ISA probe, precompiled header), {whose}; later runs on this machine "
        "reuse the header from torchinductor_$USER/precompiled_headers in the temp dir (TMPDIR; "
        "TORCHINDUCTOR_CACHE_DIR does not move it)",
    )


def _fused_kernels(session: Session, total: float) -> Finding | None:
    """Kernels that fuse a parametrization's nodes into the user's: it is given its nodes' share of
    their size-dependent build cost (``ingest.kernel_split``); what it changes in Inductor's fusion
    (more or other kernels) only a run without it shows."""
    n = sum(f.fused_kernels for f in session.frames)
    secs = sum(f.fused_kernel_s for f in session.frames)
    if n == 0 or secs < 0.5 or session.counterfactual is not None:  # there, _counterfactual says it
        return None
    return Finding(
        "fused_kernels",
        secs * 0.25,  # a caveat on the parametrization's figure, not a cause of its own
        f"{fmt.plural(n, 'Inductor kernel')} fuse a parametrization's nodes into other code "
        f"({fmt.seconds(secs)} to build); the parametrization is counted for its nodes' share of their size, "
        "not for kernels it makes Inductor build in place of others: to see those, compare with a run "
        "without it (dynaprof compare PLAIN_RUN THIS_RUN)",
    )


def _counterfactual(session: Session, total: float) -> Finding | None:
    """``dynaprof run --counterfactual``: what the run without the parametrizations compiled, and
    the kernels only this run built (given to the parametrization whole, ``ingest.kernel_match``)."""
    cf = session.counterfactual
    if cf is None:
        return None
    extra = (f"; {fmt.plural(cf.extra_kernels, 'kernel')} that fuse a parametrization's nodes have no counterpart "
             f"there ({fmt.seconds(cf.extra_kernel_s)} to build) and count under it" if cf.extra_kernels else "")
    mine = toolchain_seconds(session.samples.stacks, session.functions) if session.samples else None
    setup = ""
    if cf.toolchain_s is not None and mine is not None and max(cf.toolchain_s, mine) >= 0.5:
        setup = (f" ({fmt.seconds(cf.compile_s - cf.toolchain_s)} against {fmt.seconds(total - mine)} without the "
                 "one-time toolchain setup, which a process may find built already)")
    return Finding(
        "counterfactual",
        0.0,  # a measured comparison beside the causes, never the verdict
        f"with its {fmt.plural(len(cf.folded), 'parametrization')} folded (a second run, cold caches), the script "
        f"compiled in {fmt.seconds(cf.compile_s)} against {fmt.seconds(total)} here" + setup
        + (f", {fmt.plural(cf.kernels, 'Inductor kernel')} against {cf.kernels_here}"
           if cf.kernels_here is not None and (cf.kernels_here or cf.kernels) else "")
        + extra + " (one run each: their difference is as noisy as two runs)",
    )


def _restarts(session: Session, total: float) -> Finding | None:
    frames = [f for f in session.frames if f.restarts > 0]
    if not frames:
        return None
    wasted = sum(discarded_seconds(f) or 0.0 for f in frames)
    wasted = wasted or (session.axes.restart_waste.seconds if session.axes else 0.0)
    n = sum(f.restarts for f in frames)
    reasons = Counter(r for f in frames for r in f.restart_reasons)
    why = f"; reason: {fmt.one_line(reason_words(reasons.most_common(1)[0][0]), 120)}" if reasons else ""
    site = next(((b.filename, b.lineno) for f in frames for b in f.graph_break_reasons if b.filename), None)
    if site is not None:
        why += f", raised at {fmt.location(site[0], site[1])}"
    by_cause = session.axes.restart_waste.by_cause if session.axes else {}
    if by_cause:
        what, _ = max(by_cause.items(), key=lambda kv: kv[1])
        if what != CAUSE_WHOLE_GRAPH:
            why += f"; while tracing {_parametrization_name(session) if what == CAUSE_PARAMETRIZATION else what}"
    return Finding(
        "restarts",
        wasted,
        f"{fmt.plural(n, 'restart')} of analysis in {len(frames)} "
        f"{'frame' if len(frames) == 1 else 'frames'} threw away {fmt.seconds(wasted)} "
        f"({fmt.pct(wasted, total)} of compile){why}",
    )


def discarded_seconds(f: CompiledFrame) -> float | None:
    """Time spent in attempts that were restarted (all but the last)."""
    if f.restarts == 0:
        return 0.0
    durations = [a.duration_s for a in sorted(f.attempts, key=lambda a: a.index)[:-1]]
    if durations and all(d is not None for d in durations):
        return sum(d for d in durations if d is not None)
    before = f.metrics.get("dynamo_time_before_restart_s")
    return float(before) if isinstance(before, (int, float)) else None


def _recompiles(session: Session, total: float) -> Finding | None:
    groups: dict[tuple[int, str, str, int], list[CompiledFrame]] = defaultdict(list)
    for f in session.frames:
        if f.kind != "backward":  # a backward compile is its forward's other half, not a recompile
            groups[(f.generation, f.name, f.filename, f.lineno)].append(f)
    worst = max(groups.values(), key=lambda g: (len(g), sum(f.compile_time_s or 0 for f in g)), default=[])
    if len(worst) < 2:
        return None
    secs = sum(f.compile_time_s or 0.0 for f in worst[1:])
    reason = next((f.recompile_reason for f in reversed(worst) if f.recompile_reason), None)
    name, filename, lineno = display_name(worst[0])
    why = f"; last reason: {fmt.one_line(reason, 100)}" if reason else ""
    sizes = _sizes_changed(worst)
    return Finding(
        "recompiles",
        secs,
        f"{name} ({fmt.location(filename, lineno)}) was "
        f"recompiled {fmt.plural(len(worst) - 1, 'time')}, {fmt.seconds(secs)} "
        f"({fmt.pct(secs, total)} of compile){why}",
        REMEDY_DYNAMIC if sizes else None,
    )


def _sizes_changed(frames: list[CompiledFrame]) -> bool:
    """Whether torch recompiled any of ``frames`` because a tensor's size changed."""
    return any(f.recompile_reason and "size mismatch" in f.recompile_reason for f in frames)


def _little_used(session: Session, total: float) -> Finding | None:
    """Compiles that bought little: of a function compiled more than once, the entries that ran at
    most once (live capture counts calls; unknown counts are never taken for few)."""
    groups: dict[tuple[int, str, str, int], list[CompiledFrame]] = defaultdict(list)
    for f in session.frames:
        if f.kind != "backward":
            groups[(f.generation, f.name, f.filename, f.lineno)].append(f)
    best: tuple[float, list[CompiledFrame], list[CompiledFrame]] | None = None
    for group in groups.values():
        few = [f for f in group if f.calls is not None and f.calls <= 1]
        if len(group) < 2 or not few:
            continue
        wasted = sum(f.compile_time_s or 0.0 for f in few)
        if best is None or wasted > best[0]:
            best = (wasted, group, few)
    if best is None:
        return None
    wasted, group, few = best
    name, filename, lineno = display_name(group[0])
    all_s = sum(f.compile_time_s or 0.0 for f in group)
    once = sum(1 for f in few if f.calls == 1)
    ran = (f"{once} of those entries ran once each" if once == len(few)
           else f"{len(few)} of those entries ran at most once ({len(few) - once} never)")
    sizes = _sizes_changed(group)
    return Finding(
        "little_used",
        wasted,
        f"{name} ({fmt.location(filename, lineno)}) was compiled {len(group)} times, {fmt.seconds(all_s)} in all; "
        f"{ran}, {fmt.seconds(wasted)} ({fmt.pct(wasted, total)} of compile) for at most "
        f"{fmt.plural(sum(f.calls or 0 for f in few), 'call')}",
        ("the size changes between calls: mark the dimension dynamic (torch._dynamo.mark_dynamic(x, 0)) "
         "or compile with dynamic=True") if sizes else None,
    )


def _recompile_limit(session: Session, total: float) -> Finding | None:
    """Frames that hit the recompile limit: later calls of new shapes ran uncompiled."""
    hit = [f for f in session.frames if f.recompile_limit_hit]
    if not hit:
        return None
    f = hit[0]
    name, filename, lineno = display_name(f)
    known = [x.eager_fallback_calls for x in hit if x.eager_fallback_calls is not None]
    calls = (f"{fmt.count(sum(known))} calls ran uncompiled" if len(known) == len(hit)
             else "at least one call ran uncompiled (torch runs later ones without telling dynaprof: not counted)")
    others = f" (and {fmt.plural(len(hit) - 1, 'other frame')})" if len(hit) > 1 else ""
    return Finding(
        "recompile_limit",
        0.0,
        f"{name} ({fmt.location(filename, lineno)}){others} hit torch._dynamo.config.{f.recompile_limit_hit} and "
        f"fell back to eager: {calls}",
        f"find what changes between calls (the recompile reasons), or raise torch._dynamo.config."
        f"{f.recompile_limit_hit}",
    )


#: the code Dynamo compiles after a graph break (the rest of the frame) starts with this name
RESUME_PREFIX = "torch_dynamo_resume_in_"


def _graph_breaks(session: Session, total: float) -> Finding | None:
    """Graph breaks, named by their line and cause, weighed by what they cost: the attempts their
    frames threw away (a break restarts the analysis) and the compiles of the code after them."""
    n = sum(f.graph_breaks for f in session.frames)
    if n == 0:
        return None
    broken = [f for f in session.frames if f.graph_breaks]
    restarts = sum(f.restarts for f in broken)
    wasted = sum(discarded_seconds(f) or 0.0 for f in broken)
    resumed = sum(f.compile_time_s or 0.0 for f in session.frames if f.name.startswith(RESUME_PREFIX))
    cost = wasted + resumed
    sites: Counter[tuple[str, str]] = Counter()
    for f in session.frames:
        for r in f.graph_break_reasons:
            where = fmt.location(r.filename, r.lineno) if r.filename else ""
            sites[(where, fmt.one_line(reason_words(r.reason), 100))] += 1
    what = f"{fmt.plural(n, 'graph break')}"
    if sites:
        (where, why), _k = sites.most_common(1)[0]
        what = (f"graph break at {where} ({why})" if where else f"graph break ({why})") if n == 1 else (
            f"{n} graph breaks, most at {where} ({why})" if where else f"{n} graph breaks, most: {why}")
    parts = []
    if restarts:
        parts.append(f"{fmt.plural(restarts, 'restart')}")
    text = f"{what} cost " + " and ".join([*parts, f"{fmt.seconds(cost)} ({fmt.pct(cost, total)} of compile)"])
    text += ": Dynamo restarts the analysis at the break and compiles the code after it as another frame"
    # without restarts or resumed frames, weigh it by half its frames' time, as before
    weight = cost if cost > 0 else 0.5 * sum(f.compile_time_s or 0.0 for f in broken)
    return Finding("graph_breaks", weight, text, _graph_break_remedy(session))


def _graph_break_remedy(session: Session) -> str | None:
    """torch's own hint for the first graph break, at the user's line."""
    for f in session.frames:
        for r in f.graph_break_reasons:
            text = r.reason or ""
            at = f" at {fmt.location(r.filename, r.lineno)}" if r.filename else ""
            if "Hint:" in text:
                hint = fmt.one_line(text.split("Hint:", 1)[1].split("Hint:", 1)[0], 140)
                return f"graph break{at}: {hint} (torch's hint)"
            if at:
                return f"graph break{at}: move what Dynamo cannot trace out of the compiled code"
    return None


def _failures(session: Session, total: float) -> Finding | None:
    failed = [f for f in session.frames if f.status == "failed"]
    if not failed:
        return None
    first = failed[0]
    why = fmt.one_line(f"{first.fail_type or 'error'}: {first.fail_reason or ''}", 140)
    secs = sum(f.compile_time_s or 0.0 for f in failed)
    where = f" at {fmt.location(first.fail_filename, first.fail_lineno)}" if first.fail_filename else ""
    in_parametrize = [f for f in failed if f.fail_filename and PARAMETRIZE_FILE in f.fail_filename.replace("\\", "/")]
    remedy = None
    if in_parametrize:
        why = (f"{len(in_parametrize)} of them inside torch.nn.utils.parametrize: a parametrization registered or "
               f"removed inside the compiled code (peft's target_parameters does this on every call); first: {why}")
        remedy = REMEDY_REGISTER_OUTSIDE
    # a failed compile outranks any slow one: that code silently runs eagerly
    return Finding(
        "failures",
        total + secs,
        f"{fmt.plural(len(failed), 'compile')} failed "
        f"({fmt.seconds(secs)} spent); first: {display_id(first)} {display_name(first)[0]}{where}: {why}",
        remedy,
    )


def _top_category(session: Session, total: float) -> Finding | None:
    attr = {k: v for k, v in session.attribution.items() if k != "other"}
    if not attr:
        return None
    cat, secs = max(attr.items(), key=lambda kv: kv[1])
    if secs <= 0:
        return None
    return Finding(
        f"category:{cat}",
        secs,
        f"{CATEGORY_LABELS.get(cat, cat)} took {fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile, sampled)",
    )


def _slowest_frame(session: Session, total: float) -> Finding | None:
    timed = [f for f in session.frames if f.compile_time_s is not None]
    if not timed:
        return None
    f = max(timed, key=lambda f: f.compile_time_s or 0.0)
    secs = f.compile_time_s or 0.0
    name, filename, lineno = display_name(f)
    return Finding(
        "slowest_frame",
        secs * 0.25,
        f"slowest compile: {display_id(f)} {name} "
        f"({fmt.location(filename, lineno)}) {fmt.seconds(secs)}, {fmt.count(f.guard_count)} guards",
    )


def _backward(session: Session, total: float) -> Finding | None:
    """Backward compiles (AOT autograd's lazy ones, compiled autograd) when they are a large share."""
    kinds = session.compile_by_kind()
    secs = kinds.get("backward", 0.0) + kinds.get("compiled_autograd", 0.0)
    if secs <= 0 or secs < 0.25 * total:
        return None
    n = sum(1 for f in session.frames if f.kind != "forward")
    return Finding(
        "backward",
        secs * 0.5,  # a fact about where time went, not a cause: a named cause or category leads
        f"backward compiles took {fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile, "
        f"{fmt.plural(n, 'compile')}): AOT autograd compiles the backward graph at the first .backward()",
    )


def findings(session: Session) -> list[Finding]:
    total = session.total_compile_s
    found = [
        fn(session, total)
        for fn in (_failures, _parametrization, _restarts, _recompiles, _little_used, _recompile_limit, _graph_breaks,
                   _top_category, _slowest_frame, _backward, _no_provenance, _toolchain, _fused_kernels,
                   _counterfactual)
    ]
    found += _causes(session, total)
    keys = {f.key for f in found if f is not None}
    if f"cause:{CAUSE_PARAMETRIZATION}" in keys:  # the cause view already says it, with its phases
        found = [f for f in found if f is None or f.key != "parametrization"]
    ax = session.axes
    named = max((f.seconds for f in found if f is not None and f.key.startswith("cause:")), default=0.0)
    unnamed = sum(ax.causes.get(c, 0.0) for c in UNNAMED_CAUSES) if ax else 0.0
    if named > unnamed:  # the verdict names a cause, and its phases say the rest
        found = [f for f in found if f is None or not f.key.startswith("category:")]
    kept = [f for f in found if f is not None]
    # "other user-code tracing took 2.4 s" (the sum over 132 traced functions) says less than
    # "forward was recompiled 2 times, 2.4 s": a category total goes after such a finding
    specific = total > 0 and any(not f.key.startswith(_NOT_SPECIFIC) and f.seconds >= SPECIFIC_SHARE * total
                                 for f in kept)
    return sorted(kept, key=lambda f: (specific and f.key.startswith("category:"), -f.seconds))


#: a finding about one thing (a recompiled function, a graph break, a failure) that costs at least
#: this share of compile comes before a category total, which sums many causes' time
SPECIFIC_SHARE = 0.2
#: findings that are facts about where time went, not one thing to change
_NOT_SPECIFIC = ("category:", "slowest_frame", "backward", "no_provenance", "recompile_limit", "toolchain",
                 "fused_kernels", "counterfactual")


def hottest(session: Session, found: list[Finding] | None = None) -> str:
    """The verdict; ``found``: ``findings(session)`` where the caller has it already (each call
    works out every finding again)."""
    if not session.frames:
        return "no torch.compile compilation happened in this run"
    found = findings(session) if found is None else found
    return found[0].text if found else "nothing stands out"


def totals(session: Session) -> dict[str, float | int | None]:
    """Run totals shown in every summary."""
    frames = session.frames
    guards = [f.guard_count for f in frames if f.guard_count is not None]
    return {
        "frames": len(frames),
        "compile_s": session.total_compile_s,
        "outermost_frames": len(session.outermost_frames()),
        "restarts": sum(f.restarts for f in frames),
        "graph_breaks": sum(f.graph_breaks for f in frames),
        "guards": sum(guards) if guards else None,
        "failed": sum(1 for f in frames if f.status == "failed"),
        **{f"{kind}_s": secs for kind, secs in session.compile_by_kind().items()},
    }
