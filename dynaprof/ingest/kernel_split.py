"""Whose each Inductor kernel's build is, and what a fused parametrization adds to it.

Live capture samples each kernel's build under a cause of its own (``KERNEL_CAUSE``: in process,
and its share of a wait, ``ingest.kernel_waits``) and writes a ``kernel`` record with the kernel's
origin nodes by cause. Here those samples go to their owner:

* a kernel of one side (only a parametrization's nodes, or none of them) is that side's;
* a kernel that fuses a parametrization's nodes into other code's (Inductor's CPU backend puts
  each weight norm in the kernel of the op beside it) is split. The other code would build the
  kernel anyway, so it keeps the kernel's fixed cost and its own nodes' share of the rest; the
  parametrization gets its nodes' share of what grows with the kernel's size.

The cost of a kernel is estimated from the run's own kernels: build seconds against node count, a
line ``a + s * nodes`` fitted by Theil-Sen (the median of pairwise slopes, so one odd kernel does
not move it; slope and intercept kept non-negative). The parametrization's fraction of a fused
kernel is ``s * its nodes / (a + s * all nodes)``. On a 2-core CPU a C++ kernel's build is nearly
all fixed cost (docs/causes.md measures it), so that fraction is small there. With fewer than two
node counts to fit, the split is by node count. A kernel's build seconds are its worker's measure
plus its in-process samples, less any toolchain setup on them (the first C++ kernel's one-time
work, ``model.toolchain``), which is not the kernel's own cost.

What one run cannot see: a parametrization can change how Inductor fuses the rest (HiFi-GAN
builds 17 kernels with weight norm and 13 without), and no single run shows the kernels the plain
model would have built. ``CompiledFrame.fused_kernels`` counts the fused kernels so a finding can
say so. With ``dynaprof run --counterfactual`` a second run shows them: a fused kernel it built no
counterpart of (``ingest.kernel_match``) is the parametrization's whole.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from dynaprof.fmt import stored_s
from dynaprof.ingest import kernel_waits
from dynaprof.ingest.kernel_match import KernelUsers, PlainKernels, ReplayKernels, match, user_keys
from dynaprof.ingest.kernel_waits import KernelWait, add_unknown, split_stack, unknown_id
from dynaprof.model.journal import Kernel  # ids already the session's function-table ids (-1: none)
from dynaprof.model.session import CompiledFrame, Counterfactual, FunctionRef, Replay, Stack
from dynaprof.model.toolchain import toolchain_ids

#: reference kernels used for the fit at most (evenly spread over node counts): pairs grow as n**2
_MAX_FIT = 200


def is_mixed(k: Kernel) -> bool:
    """Whether ``k`` fuses a parametrization's nodes into other code's."""
    return k["param"] >= 0 and k["rest"] >= 0


def matched_by(k: Kernel, functions: list[FunctionRef]) -> KernelUsers:
    """What a run without the parametrizations is matched against: ``k``'s user causes."""
    users = user_keys(tuple(k.get("users", ())), functions)
    return KernelUsers(k["key"], k["cause"], k["param_nodes"], is_mixed(k), users)


@dataclass
class Extra:
    """Fused kernels a run without the parametrizations (the replay's, or a counterfactual run's)
    has no counterpart of, and their build seconds; and that run's kernels none of this run's
    claimed, priced at the mean of this run's kernel builds."""

    kernels: int = 0
    seconds: float = 0.0
    spared: int = 0
    spared_s: float = 0.0


def _matched(kernels: list[Kernel], functions: list[FunctionRef], plain: PlainKernels,
             built: dict[int, float]) -> tuple[set[int], Extra]:
    """The kernels without a counterpart in ``plain`` and what they and the spared ones cost."""
    ids, spared = match([matched_by(k, functions) for k in kernels], plain)
    costs = [s for s in built.values() if s > 0]
    mean = statistics.fmean(costs) if costs else 0.0
    extra = Extra(len(ids), stored_s(sum(built.get(c, 0.0) for c in ids)), spared, stored_s(spared * mean))
    return ids, extra


@dataclass(frozen=True)
class BaseCost:
    """Build seconds of a kernel of ``n`` nodes: a fixed ``a`` and ``s`` a node."""

    a: float
    s: float

    def at(self, n: int) -> float:
        return self.a + self.s * n


def in_process_seconds(stacks: list[Stack], kernels: list[Kernel], functions: list[FunctionRef]) -> dict[int, float]:
    """Sampled seconds of each kernel's builder call (its cause id -> seconds), toolchain setup
    left out. Read before the waits are split, so a wait's share is not counted twice."""
    ids = {k["cause"] for k in kernels}
    toolchain = toolchain_ids(functions)
    out: dict[int, float] = {}
    for st in stacks:
        if st.cause in ids and toolchain.isdisjoint(st.compiler):
            out[st.cause] = out.get(st.cause, 0.0) + st.seconds
    return out


def build_seconds(kernels: list[Kernel], waits: list[KernelWait], in_process: dict[int, float]) -> dict[int, float]:
    """Each kernel's build seconds: its workers' measures plus its in-process samples."""
    ids = {k["cause"] for k in kernels}
    out = {cid: s for cid, s in in_process.items() if cid in ids}
    for w in waits:
        for cid, s in w.shares:
            if cid in ids and s > 0:
                out[cid] = out.get(cid, 0.0) + s
    return out


def fit_base(points: list[tuple[int, float]]) -> BaseCost | None:
    """The cost line of the run's kernels from their (nodes, build seconds) (see the module
    docstring); None when fewer than two node counts are measured."""
    pts = sorted(p for p in points if p[1] > 0)
    if len({n for n, _ in pts}) < 2:
        return None
    if len(pts) > _MAX_FIT:
        step = len(pts) / _MAX_FIT
        pts = [pts[int(i * step)] for i in range(_MAX_FIT)]
    slopes = [(b2 - b1) / (n2 - n1) for i, (n1, b1) in enumerate(pts) for n2, b2 in pts[i + 1 :] if n2 != n1]
    s = max(0.0, statistics.median(slopes))
    a = max(0.0, statistics.median(b - s * n for n, b in pts))
    return BaseCost(a, s)


def param_fraction(k: Kernel, base: BaseCost | None) -> float:
    """The parametrization's fraction of one kernel's build."""
    if k["param"] < 0:
        return 0.0
    if k["rest"] < 0:
        return 1.0
    if k["nodes"] <= 0:
        return 0.0
    if base is None:
        return k["param_nodes"] / k["nodes"]
    whole = base.at(k["nodes"])
    return min(1.0, base.s * k["param_nodes"] / whole) if whole > 0 else k["param_nodes"] / k["nodes"]


def fractions(kernels: list[Kernel], built: dict[int, float]) -> dict[int, float]:
    """Kernel cause id -> the parametrization's fraction of its build."""
    base = fit_base([(k["nodes"], built.get(k["cause"], 0.0)) for k in kernels if k["nodes"] > 0])
    return {k["cause"]: param_fraction(k, base) for k in kernels}


def give_kernels(stacks: list[Stack], kernels: list[Kernel], waits: list[KernelWait], functions: list[FunctionRef],
                 frames: dict[str, CompiledFrame], plain: PlainKernels | None = None,
                 check: PlainKernels | None = None) -> tuple[list[Stack], Extra, Extra]:
    """``stacks`` with each wait split between the kernels it waited for (``kernel_waits``) and
    each kernel's samples given to its owner (``split_kernels``), in frame order; what ``plain``
    (the replay's or a counterfactual run's kernels, which the split uses) and ``check`` (a
    counterfactual run's beside the replay, only counted) have no counterpart of."""
    extra, checked = Extra(), Extra()
    if not kernels and not waits:
        return stacks, extra, checked
    in_process = in_process_seconds(stacks, kernels, functions) if kernels else {}
    if waits:
        stacks = kernel_waits.split_waits(stacks, waits, functions, frames)
    if kernels:
        if check is not None:
            checked = _matched(kernels, functions, check, build_seconds(kernels, waits, in_process))[1]
        stacks = split_kernels(stacks, kernels, waits, in_process, functions, frames, plain, extra)
    return sorted(stacks, key=lambda s: (str(s.frame), -s.seconds)), extra, checked


def split_kernels(stacks: list[Stack], kernels: list[Kernel], waits: list[KernelWait],
                  in_process: dict[int, float], functions: list[FunctionRef],
                  frames: dict[str, CompiledFrame], plain: PlainKernels | None = None,
                  extra: Extra | None = None) -> list[Stack]:
    """``stacks`` with every kernel's samples given to its owner, or split between the
    parametrization and the code it is fused with (see the module docstring); sets each frame's
    ``fused_kernels`` and ``fused_kernel_s``. With ``plain``, a fused kernel it has no counterpart of
    is the parametrization's whole (counted in ``extra``). A kernel with no known node keeps its
    samples on ``unknown``; adds ``UNKNOWN_CAUSE`` to ``functions`` then."""
    if not kernels:
        return stacks
    by_id = {k["cause"]: k for k in kernels}
    built = build_seconds(kernels, waits, in_process)
    frac = fractions(kernels, built)
    if plain is not None:
        ids, found = _matched(kernels, functions, plain, built)
        for cid in ids:
            frac[cid] = 1.0
        if extra is not None:
            extra.kernels, extra.seconds, extra.spared, extra.spared_s = (
                found.kernels, found.seconds, found.spared, found.spared_s)
    for k in kernels:
        frame = frames.get(k["key"])
        if is_mixed(k) and frame is not None:
            frame.fused_kernels += 1
            frame.fused_kernel_s = stored_s(frame.fused_kernel_s + built.get(k["cause"], 0.0))
    unknown = unknown_id(functions)
    out: list[Stack] = []
    for st in stacks:
        own = by_id.get(st.cause)
        if own is None:
            out.append(st)
            continue
        if own["param"] < 0 and own["rest"] < 0:
            out.append(replace(st, cause=unknown))
            continue
        f = frac[own["cause"]]
        parts = [(cid, x) for cid, x in ((own["param"], f), (own["rest"], 1.0 - f)) if cid >= 0 and x > 0]
        out += split_stack(st, parts)
    add_unknown(functions, out, unknown)
    return out


def comparisons(plain: PlainKernels | None, replay: ReplayKernels | None, extra: Extra, checked: Extra,
                kernels_here: int, skipped: list[str]) -> tuple[Counterfactual | None, Replay | None]:
    """The session's records of the runs without the parametrizations (``give_kernels``' ``extra``
    and ``checked``): the counterfactual run's, and the replay's (also where it skipped a graph)."""
    cf = None
    if plain is not None:
        got = checked if replay is not None else extra
        cf = Counterfactual(plain.folded, plain.compile_s, plain.count, plain.exit_status, extra_kernels=got.kernels,
                            extra_kernel_s=got.seconds, kernels_here=kernels_here, toolchain_s=plain.toolchain_s)
    if replay is None and not skipped:
        return cf, None
    if replay is None:
        return cf, Replay(0, 0, failed=list(skipped))
    return cf, Replay(replay.graphs, replay.plain.count, extra.kernels, extra.seconds, extra.spared, extra.spared_s,
                      replay.seconds, skipped + replay.failed, replay.pid)
