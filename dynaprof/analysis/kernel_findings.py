"""What the report says of Inductor's kernels and a parametrization: the kernels that fuse its
nodes into other code (``CompiledFrame.fused_kernels``), and what a run without it found: the
Inductor replay (``Session.replay``, every ``dynaprof run`` on Inductor) and ``--counterfactual``'s
second run. Each is a fact beside the causes, never the verdict: ``findings`` ranks and words
them as ``(seconds, text)``."""

from __future__ import annotations

from dynaprof import fmt
from dynaprof.model.session import CAUSE_PARAMETRIZATION, Session
from dynaprof.model.toolchain import toolchain_seconds


def fused_kernels(session: Session) -> tuple[float, str] | None:
    """Kernels that fuse a parametrization's nodes into the user's, where no run without it was
    compared: it is given its nodes' share of their size-dependent build cost
    (``ingest.kernel_split``), and what it changes in Inductor's fusion is not seen."""
    n = sum(f.fused_kernels for f in session.frames)
    secs = sum(f.fused_kernel_s for f in session.frames)
    compared = session.counterfactual is not None or (session.replay is not None and session.replay.graphs > 0)
    if n == 0 or secs < 0.5 or compared:  # there, replay() or counterfactual() says it
        return None
    return (
        secs * 0.25,  # a caveat on the parametrization's figure, not a cause of its own
        f"{fmt.plural(n, 'Inductor kernel')} {'fuses' if n == 1 else 'fuse'} a parametrization's nodes into other code "
        f"({fmt.seconds(secs)} to build); the parametrization is counted for its nodes' share of their size, "
        "not for kernels it makes Inductor build in place of others: the replay that finds those did not run "
        "(--no-replay, or it failed: see the notes)",
    )


def replay(session: Session) -> tuple[float, str] | None:
    """The Inductor replay: the kernels that exist only because of the parametrization (given to it
    whole) and those it spared, beside the counterfactual run's measure where both ran."""
    r = session.replay
    if r is None or r.graphs == 0:
        return None
    extra = (f"{fmt.plural(r.extra_kernels, 'kernel')} of this run exist only because of it "
             f"({fmt.seconds(r.extra_kernel_s)} to build) and count under it" if r.extra_kernels
             else "every kernel of this run has a counterpart there")  # fmt: skip
    spared = (f"; the folded graphs define {fmt.plural(r.spared_kernels, 'kernel')} this run did not (about "
              f"{fmt.seconds(r.spared_kernel_s)} at this run's mean build), which it spared"
              if r.spared_kernels else "")  # fmt: skip
    failed = f"; {fmt.plural(len(r.failed), 'graph')} could not be replayed (notes)" if r.failed else ""
    cf = session.counterfactual
    check = ""
    if cf is not None:
        estimate = session.axes.causes.get(CAUSE_PARAMETRIZATION, 0.0) if session.axes else 0.0
        measured = session.total_compile_s - cf.compile_s
        check = (f"; the second run (--counterfactual) counted {fmt.plural(cf.extra_kernels, 'such kernel')}, "
                 f"and the parametrization's estimate here is {fmt.seconds(estimate)} against "
                 f"{fmt.seconds(measured)} measured between the two runs")
    return (
        0.0,  # a fact behind the parametrization's figure, never the verdict
        f"Inductor replay of {fmt.plural(r.graphs, 'graph')} with the parametrizations folded "
        f"({fmt.seconds(r.seconds)}, after the script, no kernel built, outside compile time): "
        f"{fmt.plural(r.kernels, 'kernel')} without them; "
        + extra + spared + failed + check,
    )


def counterfactual(session: Session, total: float) -> tuple[float, str] | None:
    """``dynaprof run --counterfactual``: what the run without the parametrizations compiled, and
    the kernels only this run built (given to the parametrization whole, ``ingest.kernel_match``,
    unless the replay ran: its kernels split the run's, and these are counted beside them)."""
    cf = session.counterfactual
    if cf is None:
        return None
    extra = (f"; {fmt.plural(cf.extra_kernels, 'kernel')} that fuse a parametrization's nodes have no counterpart "
             f"there ({fmt.seconds(cf.extra_kernel_s)} to build)"
             + (" and count under it" if session.replay is None else "") if cf.extra_kernels else "")  # fmt: skip
    mine = toolchain_seconds(session.samples.stacks, session.functions) if session.samples else None
    setup = ""
    if cf.toolchain_s is not None and mine is not None and max(cf.toolchain_s, mine) >= 0.5:
        setup = (f" ({fmt.seconds(cf.compile_s - cf.toolchain_s)} against {fmt.seconds(total - mine)} without the "
                 "one-time toolchain setup, which a process may find built already)")
    return (
        0.0,  # a measured comparison beside the causes, never the verdict
        f"with its {fmt.plural(len(cf.folded), 'parametrization')} folded (a second run, cold caches), the script "
        f"compiled in {fmt.seconds(cf.compile_s)} against {fmt.seconds(total)} here" + setup
        + (f", {fmt.plural(cf.kernels, 'Inductor kernel')} against {cf.kernels_here}"
           if cf.kernels_here is not None and (cf.kernels_here or cf.kernels) else "")
        + extra + " (one run each: their difference is as noisy as two runs)",
    )
