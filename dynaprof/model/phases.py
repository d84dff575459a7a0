"""The compiler's phases and the groups every page shows them in: the one place they are defined.

A sampled second has a phase (``analysis.causes`` decides which) and each phase belongs to one
group, a column of the cause x phase table and a key of a session's ``attribution``
(``docs/attribution.md``, "One breakdown").
"""

from __future__ import annotations

from dataclasses import dataclass

#: phases of the compiler, finest first-class steps (docs/attribution.md)
PHASES: tuple[str, ...] = (
    "dynamo_tracing",
    "fake_tensor",
    "guard_building",
    "aot_trace",
    "aot_partition",
    "aot_other",
    "graph_passes",
    "lowering",
    "scheduling",
    "codegen",
    "inductor_other",
    "kernel_compile",
    "toolchain_setup",
    "autotuning",
    "cache",
    "garbage_collection",
    "other",
)

PHASE_LABELS: dict[str, str] = {
    "dynamo_tracing": "Dynamo tracing",
    "fake_tensor": "fake tensors / variable building",
    "guard_building": "guard building",
    "aot_trace": "AOT autograd trace",
    "aot_partition": "AOT autograd partitioning",
    "aot_other": "AOT autograd (other)",
    "graph_passes": "Inductor graph passes",
    "lowering": "Inductor lowering",
    "scheduling": "Inductor scheduling/fusion",
    "codegen": "Inductor codegen",
    "inductor_other": "Inductor (other)",
    "kernel_compile": "C++/Triton kernel compile",
    "toolchain_setup": "toolchain setup",
    "autotuning": "autotuning",
    "cache": "cache lookups",
    "garbage_collection": "garbage collection",
    "other": "other",
}

@dataclass(frozen=True)
class PhaseGroup:
    """One column of the breakdown: phases a compiler engineer reads together."""

    key: str
    label: str
    short: str  # the terminal's column header
    phases: tuple[str, ...]


#: The one breakdown every page shows (the cause x phase table's columns, the flamegraphs' colours,
#: ``attribution``'s keys), in pipeline order. A group of one phase has the phase's key and label, so
#: a label a reader sees always stands for one number.
PHASE_GROUPS: tuple[PhaseGroup, ...] = (
    PhaseGroup("dynamo_tracing", PHASE_LABELS["dynamo_tracing"], "tracing", ("dynamo_tracing",)),
    PhaseGroup("fake_tensor", PHASE_LABELS["fake_tensor"], "fake", ("fake_tensor",)),
    PhaseGroup("guard_building", PHASE_LABELS["guard_building"], "guards", ("guard_building",)),
    PhaseGroup("aot_autograd", "AOT autograd", "AOT", ("aot_trace", "aot_partition", "aot_other")),
    PhaseGroup("inductor", "Inductor passes, lowering, scheduling, codegen", "Inductor",
               ("graph_passes", "lowering", "scheduling", "codegen", "inductor_other", "autotuning")),
    PhaseGroup("kernel_compile", PHASE_LABELS["kernel_compile"], "kernels", ("kernel_compile",)),
    PhaseGroup("toolchain_setup", PHASE_LABELS["toolchain_setup"], "toolchain", ("toolchain_setup",)),
    PhaseGroup("cache", PHASE_LABELS["cache"], "cache", ("cache",)),
    PhaseGroup("garbage_collection", PHASE_LABELS["garbage_collection"], "GC", ("garbage_collection",)),
    PhaseGroup("other", PHASE_LABELS["other"], "other", ("other",)),
)
#: phase -> the key of its group
GROUP_OF: dict[str, str] = {p: g.key for g in PHASE_GROUPS for p in g.phases}
#: group keys (``attribution``'s keys), in pipeline order
CATEGORIES: tuple[str, ...] = tuple(g.key for g in PHASE_GROUPS)
CATEGORY_LABELS: dict[str, str] = {g.key: g.label for g in PHASE_GROUPS}
if set(GROUP_OF) != set(PHASES):  # pragma: no cover - a table error, caught by any import
    raise AssertionError("every phase belongs to one group")
