"""Findings: what a compiler engineer should look at first, each as one sentence with seconds.

``findings(session)`` returns them ranked by the seconds a user could save (``Finding.seconds``,
one rule per finding, tabled in docs/attribution.md); ``hottest(session)`` is the sentence the
terminal summary and every report lead with. A sentence names its cause first, then the seconds,
then the phase that took them, in at most ``VERDICT_CHARS`` characters; names are never cut.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from dataclasses import dataclass

from dynaprof import fmt
from dynaprof.analysis import kernel_findings, site_findings
from dynaprof.analysis.causes import phase_seconds
from dynaprof.analysis.recompile_causes import SIZES, RecompileCause, recompile_cause
from dynaprof.analysis.remedies import (
    PEFT_FOLD,
    REMEDY_DYNAMIC,
    REMEDY_FOLD,
    REMEDY_FOLD_RECOMPILES,
    REMEDY_GC_FREEZE,
    REMEDY_REGISTER_OUTSIDE,
    REMEDY_UNWRAP,
)
from dynaprof.analysis.site_findings import discarded_seconds, graph_break_remedy
from dynaprof.model.cause_labels import via_classes
from dynaprof.model.code_names import RESUME_PREFIX
from dynaprof.model.reason_words import reason_words
from dynaprof.model.session import (
    CATEGORY_LABELS,
    CAUSE_COLLECTOR,
    CAUSE_PARAMETRIZATION,
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
from dynaprof.model.toolchain import repaid_seconds, toolchain_seconds


@dataclass(frozen=True)
class Finding:
    key: str
    #: the rank: the seconds a user could save by acting on it (docs/attribution.md, "ranking")
    seconds: float
    text: str
    #: what to try, in one line, where a remedy is known and was measured (docs/causes.md)
    remedy: str | None = None
    #: the cause it is given to, where that is not its key (recompiles a parametrization causes)
    cause: str | None = None




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


def _parametrization_name(session: Session, labels: int = 3) -> str:
    """``parametrization (64 properties via Parametrization: Linear.weight x32, Linear.bias x32)``;
    ``labels``: how many property labels to name (0: none, and no classes either)."""
    summary = parametrization_summary(session)
    vias = sorted({c for label in (session.axes.parametrizations if session.axes else {}) for c in via_classes(label)})
    via = f" via {', '.join(vias[:3])}" if vias and labels else ""
    if summary is None:
        return f"parametrization{' (' + via.strip() + ')' if via else ''}"
    n, _secs, items = summary
    listed = f": {_labels(items, labels)}" if labels else ""
    return f"parametrization ({n} propert{'y' if n == 1 else 'ies'}{via}{listed})"


def _fit(variants: list[str]) -> str:
    """The first of ``variants`` (each shorter than the one before) that fits ``VERDICT_CHARS``,
    else the last: a sentence drops its clauses, never cuts a name."""
    return next((v for v in variants if len(v) <= VERDICT_CHARS), variants[-1])


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
    by_phase = phase_seconds(ax, key)
    phases = [(p, v) for p, v in by_phase.items() if v >= 0.03 * secs][:3]
    parts = [f"{fmt.seconds(v)} {'one-time ' if p == TOOLCHAIN else ''}{PHASE_LABELS.get(p, p)}" for p, v in phases]
    # ranked without the toolchain setup the next run on this machine skips (the toolchain finding);
    # the share walks every stack, so only a cause that paid setup asks for it
    setup = by_phase.get(TOOLCHAIN, 0.0)
    once = setup * (1.0 - _repaid_share(session)) if setup > 0 else 0.0
    wasted = ax.restart_waste.by_cause.get(key, 0.0)
    waste = f"; {fmt.seconds(wasted)} of it in attempts that restarts threw away" if wasted > 0.01 * secs else ""
    recompiled = _caused_recompiles(session, key)
    waste += f"; it caused {recompiled}" if recompiled else ""
    names = ([_parametrization_name(session, k) for k in (3, 2, 1, 0)] if key == CAUSE_PARAMETRIZATION
             else [key])
    variants = []
    for name in names:  # the verdict stays one short sentence: fewer phases, then fewer labels
        head = f"{name} cost {fmt.seconds(secs)} of {fmt.seconds(total)} compile ({fmt.pct(secs, total)})"
        variants += [head + _phases_said(parts[:k]) + w for w in (waste, "") for k in range(len(parts), 0, -1)]
        variants.append(head)
    text = _fit(variants)
    remedy = None
    if key == CAUSE_PARAMETRIZATION:
        unwrap = any("UnwrapTensorSubclass" in label for label in ax.parametrizations)
        peft = any("/peft/" in f.filename.replace("\\", "/") for f in session.functions)
        remedy = REMEDY_UNWRAP if unwrap else REMEDY_FOLD + (PEFT_FOLD if peft else "")
    # a line of the user's own model is work the model needs: rewriting it may save part of it,
    # where a cause with a measured remedy (fold the parametrization) saves its seconds
    weight = (secs - once) * (1.0 if remedy is not None else USER_LINE_WEIGHT)
    return Finding(f"cause:{key}", weight, text, remedy)


#: the share of a user line's seconds a finding ranks by (``_cause``): below a cause with a remedy
#: of the same size, above a phase total (``_top_category``'s 0.5 of a sum over many causes)
USER_LINE_WEIGHT = 0.6
#: the most characters of the verdict sentence (its remedy, the ``try:`` line, comes apart)
VERDICT_CHARS = 200
#: the phase of a process's one-time toolchain work (model/toolchain.py)
TOOLCHAIN = "toolchain_setup"
COLLECTOR = "garbage_collection"


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
    row = session.axes.matrix.get(TOOLCHAIN, {}) if session.axes else {}
    secs = sum(row.values())
    if secs < 0.5 or secs < 0.05 * total:
        return None
    again = _repaid_share(session) * secs
    text = _fit([
        f"toolchain setup: {fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile) in the first C++ kernel build, "
        f"paid once per machine: the next run here reuses its builds and pays about {fmt.seconds(again)}",
        f"toolchain setup: {fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile), paid once per machine: "
        f"the next run pays about {fmt.seconds(again)}",
    ])
    # ranked by what the next run still pays: the rest is gone by itself
    return Finding("toolchain", again, text)


def _collector(session: Session, total: float) -> Finding | None:
    """Python's cyclic garbage collector, timed by the sampler (``garbage_collection``): a full
    collection walks every object alive, so a compile that crosses its threshold pays for the whole
    program's objects, and no cause's change removes that."""
    row = session.axes.matrix.get(COLLECTOR, {}) if session.axes else {}
    secs = sum(row.values())
    if secs < 0.05 or secs < 0.1 * total:
        return None
    text = _fit([
        f"the garbage collector took {fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile): a full collection "
        "walks every object alive, whichever code's allocation started it",
        f"the garbage collector took {fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile)",
    ])
    return Finding("collector", secs, text, remedy=REMEDY_GC_FREEZE)


def _repaid_share(session: Session) -> float:
    """The share of the sampled toolchain setup that the next run on this machine pays again
    (``model.toolchain.repaid_seconds``); 1 where unknown."""
    if session.samples is None:
        return 1.0
    stacks, functions = session.samples.stacks, session.functions
    setup = toolchain_seconds(stacks, functions)
    return repaid_seconds(stacks, functions) / setup if setup > 0 else 1.0


def _fused_kernels(session: Session, total: float) -> Finding | None:
    got = kernel_findings.fused_kernels(session)
    return Finding("fused_kernels", *got) if got else None


def _counterfactual(session: Session, total: float) -> Finding | None:
    got = kernel_findings.counterfactual(session, total)
    return Finding("counterfactual", *got) if got else None


def _replay(session: Session, total: float) -> Finding | None:
    got = kernel_findings.replay(session)
    return Finding("replay", *got) if got else None


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
    # named by where the restarts were raised; else by the cause holding most of the thrown-away
    # attempts, never the collector, which runs wherever allocation crosses its threshold
    by_cause = {k: v for k, v in (session.axes.restart_waste.by_cause if session.axes else {}).items()
                if k not in (CAUSE_COLLECTOR, CAUSE_UNKNOWN)}  # fmt: skip
    what = max(by_cause.items(), key=lambda kv: kv[1])[0] if by_cause else CAUSE_WHOLE_GRAPH
    if site is not None and PARAMETRIZE_FILE in site[0].replace("\\", "/"):
        what = CAUSE_PARAMETRIZATION
    subject = (f"{_parametrization_name(session, 0) if what == CAUSE_PARAMETRIZATION else what}: "
               if what != CAUSE_WHOLE_GRAPH else "")
    head = (f"{subject}{fmt.plural(n, 'restart')} in {fmt.plural(len(frames), 'frame')} threw away "
            f"{fmt.seconds(wasted)} ({fmt.pct(wasted, total)} of compile) of Dynamo tracing")
    reason, _, raised = why.partition(", raised at")
    return Finding("restarts", wasted, _fit([head + why, f"{head}; raised at{raised}" if raised else head,
                                             head + reason, head]),
                   cause=None if what == CAUSE_WHOLE_GRAPH else what)


def _entry_key(f: CompiledFrame) -> tuple[int, str, str, int]:
    return (f.generation, f.name, f.filename, f.lineno)


def entries(session: Session) -> dict[tuple[int, str, str, int], list[CompiledFrame]]:
    """The compiled entries of each function (``_entry_key``: code and ``reset`` generation), in
    compile order; a backward compile is its forward's other half, not an entry. The one rule of
    what a recompile is, for the findings and ``dynaprof check``'s budget alike."""
    groups: dict[tuple[int, str, str, int], list[CompiledFrame]] = defaultdict(list)
    for f in session.frames:
        if f.kind != "backward":
            groups[_entry_key(f)].append(f)
    return groups


def _worst_entries(session: Session) -> list[CompiledFrame]:
    """The entries of the function whose recompiles (entries beyond its first) cost most."""
    return max(entries(session).values(), key=lambda g: (sum(f.compile_time_s or 0 for f in g[1:]), len(g)),
               default=[])


def _recompile_causes(group: list[CompiledFrame]) -> list[tuple[CompiledFrame, RecompileCause]]:
    """Each recompile of one function's entries (all but the first) whose cause the rule knows."""
    return [(f, c) for f in group[1:] if (c := recompile_cause(f.recompile_reason)) is not None]


def _caused_recompiles(session: Session, cause: str) -> str:
    """``5 recompiles (641 ms)``: the recompiles the rule gives to ``cause``; empty when none."""
    mine = [f for group in entries(session).values() for f, c in _recompile_causes(group) if c.cause == cause]
    secs = sum(f.compile_time_s or 0.0 for f in mine)
    return f"{fmt.plural(len(mine), 'recompile')} ({fmt.seconds(secs)})" if mine else ""


def _top_phase(frames: list[CompiledFrame]) -> str:
    """`` , most in Dynamo tracing``: the phase group that took most of ``frames``' sampled time."""
    by: Counter[str] = Counter()
    for f in frames:
        by.update(f.attribution)
    by.pop("other", None)
    if not by:
        return ""
    top = by.most_common(1)[0][0]
    return f", most in {CATEGORY_LABELS.get(top, top)}"


def _recompiles(session: Session, total: float) -> Finding | None:
    """The function whose entries beyond its first cost most, with the cause of its recompiles
    (``analysis.recompile_causes``), the entries that ran at most once and the recompile limit."""
    worst = _worst_entries(session)
    if len(worst) < 2:
        return None
    secs = sum(f.compile_time_s or 0.0 for f in worst[1:])
    causes = Counter(c for _f, c in _recompile_causes(worst))
    cause = causes.most_common(1)[0][0] if causes else None
    said = _frame_said(worst[0])
    did = f"was recompiled {fmt.plural(len(worst) - 1, 'time')}"
    # one function, one finding: its recompiles and the limit they reached
    hit = any(f.recompile_limit_hit for f in worst)
    did += " up to its recompile limit (later calls ran uncompiled)" if hit else ""
    limit = " (limit hit)" if hit else ""
    cost = f"{fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile){_top_phase(worst[1:])}"
    subject = {CAUSE_PARAMETRIZATION: "parametrization: ", SIZES: "changing sizes: "}.get(
        cause.cause if cause else "", "recompiles: ")
    few = [f for f in worst if f.calls is not None and f.calls <= 1]
    used = f"; {len(few)} of its {len(worst)} entries ran at most once" if few else ""
    why = brief_why = ""
    if cause is not None:
        k = causes[cause]
        brief_why = f": {cause.why}"
        why = brief_why + (f" ({k} of the {len(worst) - 1})" if k < len(worst) - 1 else "")
    else:
        reason = next((f.recompile_reason for f in reversed(worst) if f.recompile_reason), None)
        why = f"; last failed guard: {fmt.one_line(reason_words(reason), 80)}" if reason else ""
    head = f"{subject}{said} {did}, {cost}"
    brief = f"{subject}{said} recompiled {fmt.plural(len(worst) - 1, 'time')}{limit}, {fmt.seconds(secs)}"
    # the verdict fits 200 characters: the why stays longest, the phase and the share go first
    text = _fit([head + why + used, head + why, head + brief_why, brief + why, brief + brief_why, head])
    remedy = None
    if cause is not None and cause.cause == SIZES:
        remedy = REMEDY_DYNAMIC
    elif cause is not None and cause.cause == CAUSE_PARAMETRIZATION:
        remedy = REMEDY_FOLD_RECOMPILES
    return Finding("recompiles", secs, text, remedy, cause.cause if cause else None)


def _frame_said(f: CompiledFrame) -> str:
    """``forward (model.py:12)``: a frame as every finding names it (``display_name``)."""
    name, filename, lineno = display_name(f)
    return f"{name} ({fmt.location(filename, lineno)})"


def _recompile_limit(session: Session, total: float) -> Finding | None:
    """Functions that hit the recompile limit: later calls of new inputs ran uncompiled; the one
    whose recompiles the recompiles finding names is said there, not twice."""
    hit = [f for f in session.frames if f.recompile_limit_hit]
    worst = _worst_entries(session)
    if worst and len(worst) > 1:  # the recompiles finding says the limit of its own function
        hit = [f for f in hit if _entry_key(f) != _entry_key(worst[0])]
    if not hit:
        return None
    f = hit[0]
    group = entries(session).get(_entry_key(f), [f])
    entries_s = sum(x.compile_time_s or 0.0 for x in group)
    known = [x.eager_fallback_calls for x in hit if x.eager_fallback_calls is not None]
    calls = (f"{fmt.count(sum(known))} later calls ran uncompiled" if len(known) == len(hit)
             else "later calls ran uncompiled (torch does not say how many)")
    others = f" (and {fmt.plural(len(hit) - 1, 'other function')})" if len(hit) > 1 else ""
    return Finding(
        "recompile_limit",
        sum(x.compile_time_s or 0.0 for x in group[1:]),
        _fit([f"recompile limit: {_frame_said(f)}{others} reached torch._dynamo.config.{f.recompile_limit_hit} "
              f"after {fmt.plural(len(group), 'entry', 'entries')} ({fmt.seconds(entries_s)} to compile them); "
              f"{calls}",
              f"recompile limit: {_frame_said(f)} reached torch._dynamo.config.{f.recompile_limit_hit} after "
              f"{fmt.plural(len(group), 'entry', 'entries')} ({fmt.seconds(entries_s)})"]),
        f"find what changes between calls (the recompile reasons), or raise torch._dynamo.config."
        f"{f.recompile_limit_hit}",
    )


def _graph_breaks(session: Session, total: float) -> Finding | None:
    """Graph breaks, named by their line and cause, weighed by what they cost: the attempts their
    frames threw away (a break restarts the analysis) and the compiles of the code after them."""
    n = sum(f.graph_breaks or 0 for f in session.frames)  # an unknown count is the import's warning
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
    where, why = sites.most_common(1)[0][0] if sites else ("", "")
    at = f" at {where}" if where else ""
    what = f"graph breaks: {fmt.plural(n, 'graph break')}{', most' if n > 1 and at else ''}{at}"
    paid = " and ".join([*([fmt.plural(restarts, 'restart')] if restarts else []),
                         f"{fmt.seconds(cost)} ({fmt.pct(cost, total)} of compile)"])
    head = f"{what} cost {paid}"
    text = _fit([f"{head}: {why}", f"{head}: Dynamo compiles the code after a break as another frame", head])
    # without restarts or resumed frames, weigh it by half its frames' time, as before
    weight = cost if cost > 0 else 0.5 * sum(f.compile_time_s or 0.0 for f in broken)
    return Finding("graph_breaks", weight, text, graph_break_remedy(session))


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
    eager = "its frame runs eagerly" if len(failed) == 1 else "their frames run eagerly"
    lost = f"{fmt.plural(len(failed), 'compile')} failed, {fmt.seconds(secs)} lost ({fmt.pct(secs, total)} of compile)"
    # ranked by the seconds they lost, like any finding; that the code now runs eagerly is said, not
    # counted as compile seconds it did not cost
    if in_parametrize:
        some = f" ({len(in_parametrize)} in torch.nn.utils.parametrize)" if len(in_parametrize) < len(failed) else ""
        head = (f"parametrization: {lost}{some}: a parametrization registered or removed inside the compiled code; "
                f"{eager}")
        variants = [f"{head}; first: {_frame_said(first)}", head]
        remedy = REMEDY_REGISTER_OUTSIDE
    else:
        head = f"failed compiles: {lost}, and {eager}"
        first_at = f"first: {_frame_said(first)}{where}"
        variants = [f"{head}; {first_at}: {why}", f"{head}: {why}", f"{head}; {first_at}", head]
    return Finding("failures", secs, _fit(variants), remedy, CAUSE_PARAMETRIZATION if in_parametrize else None)


def _top_category(session: Session, total: float) -> Finding | None:
    # toolchain setup has a finding of its own, ranked by what the next run still pays
    attr = {k: v for k, v in session.attribution.items() if k not in ("other", TOOLCHAIN, COLLECTOR)}
    if not attr:
        return None
    cat, secs = max(attr.items(), key=lambda kv: kv[1])
    if secs <= 0:
        return None
    return Finding(
        f"category:{cat}",
        secs * 0.5,  # a sum over many causes, no one thing a user can remove: a named cause leads it
        f"{CATEGORY_LABELS.get(cat, cat)} took {fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile, sampled)",
    )


def _slowest_frame(session: Session, total: float) -> Finding | None:
    timed = [f for f in session.frames if f.compile_time_s is not None]
    if len(timed) < 2:  # one compile: its time is the total, which the summary says already
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
        for fn in (_failures, _parametrization, _restarts, _recompiles, _recompile_limit, _graph_breaks,
                   _top_category, _slowest_frame, _backward, _no_provenance, _toolchain, _fused_kernels,
                   _counterfactual, _replay, _collector)
    ]
    found = _by_site(session, [f for f in found + _causes(session, total) if f is not None], total)
    keys = {f.key for f in found if f is not None}
    if f"cause:{CAUSE_PARAMETRIZATION}" in keys:  # the cause view already says it, with its phases
        found = [f for f in found if f is None or f.key != "parametrization"]
    ax = session.axes
    named = max((f.seconds for f in found if f is not None and f.key.startswith("cause:")), default=0.0)
    unnamed = sum(ax.causes.get(c, 0.0) for c in UNNAMED_CAUSES) if ax else 0.0
    if named > unnamed:  # the verdict names a cause, and its phases say the rest
        found = [f for f in found if f is None or not f.key.startswith("category:")]
    kept = [f for f in found if f is not None]
    # "C++ kernel compile took 15 s" (a sum over every cause) or "slowest compile: forward 37 s" say
    # less than "parametrization cost 4.8 s": a fact goes after a thing to change worth 5% of compile
    actionable = total > 0 and any(not f.key.startswith(FACTS) and f.seconds >= ACTIONABLE_SHARE * total
                                   for f in kept)
    return sorted(kept, key=lambda f: (actionable and f.key.startswith(FACTS), -f.seconds))


def _by_site(session: Session, found: list[Finding], total: float) -> list[Finding | None]:
    """Graph breaks, restarts and failed compiles raised at one site as one finding
    (``site_findings``), costliest site first; each kind present at such a site keeps a finding only
    for its events elsewhere, worked out on the frames no site's finding holds, so no event is said
    twice."""
    merged: list[Finding] = []
    kinds_merged: set[str] = set()
    elsewhere = session
    for _ in range(site_findings.MAX_SITES):
        ev = site_findings.merged_site(elsewhere)
        if ev is None:
            break
        text, parametrize = site_findings.describe(elsewhere, ev, total)
        merged.append(Finding(f"site:{fmt.location(*ev.site)}", site_findings.union_seconds(elsewhere, ev), text,
                              REMEDY_REGISTER_OUTSIDE if parametrize else graph_break_remedy(elsewhere),
                              CAUSE_PARAMETRIZATION if parametrize else None))  # fmt: skip
        kinds_merged |= ev.kinds
        elsewhere = dataclasses.replace(elsewhere, frames=[f for f in elsewhere.frames if f.key not in ev.frames])
    if not merged:
        return list(found)
    kinds = {"graph_breaks": _graph_breaks, "restarts": _restarts, "failures": _failures}
    rest = [g for k in sorted(kinds_merged) if (g := kinds[k](elsewhere, total)) is not None]
    return [*(f for f in found if f.key not in kinds_merged), *merged, *rest]


#: a finding about one thing to change (a cause, a recompiled function, a graph break, a failure)
#: that costs at least this share of compile comes before every fact
ACTIONABLE_SHARE = 0.05
#: findings that are facts about where time went, not one thing to change
FACTS = ("category:", "slowest_frame", "backward", "no_provenance", "fused_kernels", "counterfactual", "replay")


def overlap_note(shown: list[Finding], total: float) -> str | None:
    """Said once where the findings shown add up past the compile time: one second can count for
    two of them (a thrown-away attempt is its restart's and its cause's), never silently."""
    named = sum(f.seconds for f in shown if not f.key.startswith(FACTS) and f.seconds > 0)
    if total <= 0 or named <= total * 1.001:
        return None
    return (f"these findings overlap (together {fmt.pct(named, total)} of compile): a second can be both a cause's "
            "and a restart's or failed compile's")


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
        "graph_breaks": session.graph_breaks,
        "guards": sum(guards) if guards else None,
        "failed": sum(1 for f in frames if f.status == "failed"),
        **{f"{kind}_s": secs for kind, secs in session.compile_by_kind().items()},
    }
