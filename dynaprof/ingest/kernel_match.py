"""Which of a run's fused kernels a run without the parametrizations built no counterpart of.

A parametrization can change how Inductor fuses the code around it: HiFi-GAN builds 17 C++
kernels with weight norm and 13 without (docs/causes.md), and two of the four extra ones hold only
a weight norm and the user's ``leaky_relu``. One run cannot tell such a kernel from one the user's
code would have needed anyway; ``dynaprof run --counterfactual`` runs the script again with every
parametrization folded (``capture.hooks.unparametrize``) and this module compares the two runs' kernels.

Kernels are compared within one frame key by their user causes (the ``(label, file, line)`` of
each distinct user-code cause among their nodes; node names differ between the runs, source lines
do not): first kernels whose sets are equal, then a left-over kernel with the plain kernel it
shares the most causes with (Inductor split or merged them differently). A fused kernel of this run
left without a counterpart would not exist without the parametrization: it is given to the
parametrization whole. A kernel of user code alone left over stays with the user (it holds no node
of the parametrization's); a frame the plain run did not compile is not compared.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from dynaprof.model.session import FunctionRef

UserKey = tuple[str, str, int]


@dataclass(frozen=True)
class KernelUsers:
    """One kernel as the comparison sees it: its frame, the number of nodes a parametrization
    added, whether it fuses them with other code's, and its user causes."""

    key: str
    cause: int
    param_nodes: int
    mixed: bool
    users: frozenset[UserKey]


@dataclass
class PlainKernels:
    """The counterfactual run's kernels (frame key -> each kernel's user causes), what it folded,
    its compile time and exit status."""

    by_frame: dict[str, list[frozenset[UserKey]]] = field(default_factory=dict)
    folded: list[str] = field(default_factory=list)
    compile_s: float = 0.0  # the run's total compile seconds
    exit_status: int | None = None
    toolchain_s: float | None = None  # its sampled toolchain setup (``model.toolchain``)

    @property
    def count(self) -> int:
        return sum(map(len, self.by_frame.values()))


def user_keys(ids: tuple[int, ...], functions: list[FunctionRef]) -> frozenset[UserKey]:
    """The user causes of a kernel's nodes, by the function table's entries."""
    return frozenset((functions[i].name, functions[i].filename, functions[i].lineno)
                     for i in ids if 0 <= i < len(functions))  # fmt: skip


def plain_kernels(kernels: list[KernelUsers], folded: list[str]) -> PlainKernels:
    out = PlainKernels(folded=list(folded))
    for k in kernels:
        out.by_frame.setdefault(k.key, []).append(k.users)
    return out


def match(kernels: list[KernelUsers], plain: PlainKernels) -> tuple[set[int], int]:
    """Cause ids of this run's fused kernels that have no counterpart in ``plain`` (see the module
    docstring), and how many of ``plain``'s kernels (in the frames compared) no kernel of this run
    claimed: kernels the parametrization spared."""
    extra: set[int] = set()
    spared = 0
    by_frame: dict[str, list[KernelUsers]] = {}
    for k in kernels:
        if k.users:
            by_frame.setdefault(k.key, []).append(k)
    for key, theirs in plain.by_frame.items():
        mine = by_frame.get(key, [])
        pool = Counter(theirs)
        # kernels closest to the plain ones claim a counterpart first: user code alone, then the
        # fewest parametrization nodes
        mine = sorted(mine, key=lambda k: (k.param_nodes, k.cause))
        left: list[KernelUsers] = []
        for k in mine:
            if pool[k.users] > 0:
                pool[k.users] -= 1
            else:
                left.append(k)
        rest = list(pool.elements())
        for k in left:
            best = max(range(len(rest)), key=lambda i: (len(k.users & rest[i]), -i), default=None)
            if best is not None and k.users & rest[best]:
                rest.pop(best)
            elif k.mixed:
                extra.add(k.cause)
        spared += sum(1 for r in rest if r)  # a kernel of no user code is nobody's counterpart
    return extra, spared


@dataclass
class ReplayKernels:
    """What the Inductor replay (``capture.replay``) found: the folded graphs' kernels by frame (a
    frame replayed with no kernel has an empty list: all its fused kernels are the parametrization's),
    how many graphs it replayed, the ones it could not ("key: why"), and its wall seconds."""

    plain: PlainKernels
    graphs: int = 0
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    pid: int | None = None


def read_replay(data: Any) -> ReplayKernels:
    """The replay's JSON output as ``ReplayKernels``; a malformed entry is left out. Raises
    ValueError where the output is not the replay's at all."""
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), list):
        raise ValueError("not the replay's output")
    plain = PlainKernels()
    for key in data.get("replayed") or []:
        if isinstance(key, str):
            plain.by_frame.setdefault(key, [])
    for k in data["kernels"]:
        if not isinstance(k, dict) or not isinstance(k.get("key"), str) or not isinstance(k.get("users"), list):
            continue
        users = frozenset((str(u[0]), str(u[1]), int(u[2])) for u in k["users"]
                          if isinstance(u, list) and len(u) == 3 and isinstance(u[2], int))  # fmt: skip
        plain.by_frame.setdefault(k["key"], []).append(users)
    failed = [f"{f[0]}: {f[1]}" for f in data.get("failed") or [] if isinstance(f, list) and len(f) == 2]
    graphs = data.get("graphs")
    seconds = data.get("seconds")
    pid = data.get("pid")
    return ReplayKernels(plain, graphs if isinstance(graphs, int) else 0, failed,
                         float(seconds) if isinstance(seconds, (int, float)) else 0.0,
                         pid if isinstance(pid, int) else None)  # fmt: skip
