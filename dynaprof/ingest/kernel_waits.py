"""A wait on compile workers, split between the kernels it waited for.

Live capture samples a wait on Inductor's compile workers under a cause of its own and, when the
wait ends, records each kernel's build seconds as its worker measured them (``kernel_wait``
records; see ``dynaprof.capture.kernel_builds``). Here each of the wait's sampled stacks becomes
one stack per kernel cause, its seconds split in proportion to those build seconds: a wait on a
parametrization's kernel and a user kernel is never given to their union.

What was not measured is not guessed: a wait whose kernels have no measure keeps its seconds on
``unknown (no provenance)``, and so does the part of a partly measured wait beyond the measured
builds; both are counted in ``CompiledFrame.kernel_wait_unmeasured_s``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dynaprof.fmt import stored_s
from dynaprof.model.session import CompiledFrame, FunctionRef, Stack

#: the function-table entry of the unknown cause, as capture writes it
UNKNOWN_CAUSE = FunctionRef("unknown (no provenance)", "", 0, "cause:unknown")


@dataclass
class KernelWait:
    """One ``kernel_wait`` record, its ids already the session's function-table ids."""

    key: str
    cause: int
    seconds: float
    unmeasured: int
    shares: list[tuple[int, float]]


def unmeasured_share(wait: KernelWait) -> float:
    """The fraction of a wait that no kernel's measured build accounts for (kept on unknown). A
    measured kernel whose own cause is unknown (its nodes had no provenance) is not part of it."""
    measured = sum(s for _, s in wait.shares if s > 0)
    if measured <= 0:
        return 0.0 if wait.shares and not wait.unmeasured else 1.0
    if wait.unmeasured and wait.seconds > 0:
        return 1.0 - min(1.0, measured / wait.seconds)
    return 0.0


def weights(wait: KernelWait, unknown: int) -> list[tuple[int, float]]:
    """(cause id, fraction of the wait's samples) for one wait; fractions add up to 1."""
    measured = sum(s for _, s in wait.shares if s > 0)
    if measured <= 0:
        if wait.shares and not wait.unmeasured:  # nothing had to be built: the wait loaded them
            return [(cid, 1.0 / len(wait.shares)) for cid, _ in wait.shares]
        return [(unknown, 1.0)]
    rest = unmeasured_share(wait)  # waited for kernels with no measure
    out = [(cid, (1.0 - rest) * s / measured) for cid, s in wait.shares if s > 0]
    if rest > 0:
        out.append((unknown, rest))
    return out


def split_counts(total: int, fractions: list[float]) -> list[int]:
    """``total`` samples in proportion to ``fractions``, by largest remainder (they add up)."""
    raw = [total * f for f in fractions]
    counts = [int(x) for x in raw]
    order = sorted(range(len(raw)), key=lambda i: raw[i] - counts[i], reverse=True)
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


def split_stack(st: Stack, parts: list[tuple[int, float]]) -> list[Stack]:
    """One stack as one stack per (cause id, fraction) of ``parts``: samples by largest
    remainder, seconds in proportion (the fractions add up to 1)."""
    counts = split_counts(st.samples, [f for _, f in parts])
    return [replace(st, cause=cid, samples=n, seconds=round(st.seconds * f, 9))
            for (cid, f), n in zip(parts, counts, strict=True)]


def unknown_id(functions: list[FunctionRef]) -> int:
    """``UNKNOWN_CAUSE``'s index in ``functions``: where it is, or where ``add_unknown`` puts it."""
    return next((i for i, f in enumerate(functions) if f == UNKNOWN_CAUSE), len(functions))


def add_unknown(functions: list[FunctionRef], stacks: list[Stack], unknown: int) -> None:
    """Add ``UNKNOWN_CAUSE`` to ``functions`` when a stack was given its id and it is not there yet."""
    if unknown == len(functions) and any(st.cause == unknown for st in stacks):
        functions.append(UNKNOWN_CAUSE)


def split_waits(
    stacks: list[Stack], waits: list[KernelWait], functions: list[FunctionRef], frames: dict[str, CompiledFrame]
) -> list[Stack]:
    """``stacks`` with every wait's stacks split between its kernels' causes (see the module
    docstring); adds ``UNKNOWN_CAUSE`` to ``functions`` when a wait needs it, and sets each frame's
    ``kernel_wait_unmeasured_s``. Stacks of a wait without a record (a journal cut off mid-wait)
    are left as they are: their cause reads as unknown."""
    if not waits:
        return stacks
    unknown = unknown_id(functions)
    by_cause = {w.cause: w for w in waits}
    out: list[Stack] = []
    unmeasured: dict[str, float] = {}
    split: dict[int, tuple[list[tuple[int, float]], float]] = {}
    for st in stacks:
        wait = by_cause.get(st.cause)
        if wait is None:
            out.append(st)
            continue
        if wait.cause not in split:  # each wait's split worked out once, for all its stacks
            split[wait.cause] = (weights(wait, unknown), unmeasured_share(wait))
        parts, share = split[wait.cause]
        out += split_stack(st, parts)
        if st.frame is not None and share > 0:
            unmeasured[st.frame] = unmeasured.get(st.frame, 0.0) + st.seconds * share
    add_unknown(functions, out, unknown)
    for key, seconds in unmeasured.items():
        if key in frames:
            frames[key].kernel_wait_unmeasured_s = stored_s(seconds)
    return out
