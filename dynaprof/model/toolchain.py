"""The one-time toolchain work of a process's first C++ kernel build, as it shows on a stack.

One home for the rule: the analysis gives such samples the phase ``toolchain_setup``
(``analysis.causes.stack_phase``), and the assembler leaves them out of the kernel's own build
seconds when it weighs what a fused parametrization adds (``ingest.kernel_split``).
"""

from __future__ import annotations

from dynaprof.model.session import FunctionRef, Stack

#: probing the CPU's vector ISA (compiling and running test programs) and building the precompiled
#: header: (file needle, and function name or None for the whole file). Torch before 2.5 probes in
#: codecache.py itself (``valid_vec_isa_list``, called by ``pick_vec_isa``) and has no header.
TOOLCHAIN_FRAMES: tuple[tuple[str, str | None], ...] = (
    ("torch/_inductor/cpu_vec_isa.py", None),
    ("torch/_inductor/codecache.py", "_precompile_header"),
    ("torch/_inductor/codecache.py", "pick_vec_isa"),
    ("torch/_inductor/codecache.py", "valid_vec_isa_list"),
)


def toolchain_file(filename: str) -> bool:
    """Whether a frame of ``filename`` can be toolchain setup (``toolchain_frame`` then asks its name)."""
    path = "/" + filename.replace("\\", "/")
    return any(needle in path for needle, _ in TOOLCHAIN_FRAMES)


def toolchain_frame(f: FunctionRef) -> bool:
    """Whether ``f`` is toolchain setup (the whole sample is, wherever on the stack it appears)."""
    return _among(f, TOOLCHAIN_FRAMES)


def _among(f: FunctionRef, frames: tuple[tuple[str, str | None], ...]) -> bool:
    path = "/" + f.filename.replace("\\", "/")
    return any(needle in path and (name is None or f.name.rsplit(".", 1)[-1] == name) for needle, name in frames)


def toolchain_ids(functions: list[FunctionRef]) -> frozenset[int]:
    """The function-table ids of toolchain setup frames: a stack is such setup when its compiler
    frames meet them."""
    return frozenset(i for i, f in enumerate(functions) if toolchain_frame(f))


def toolchain_seconds(stacks: list[Stack], functions: list[FunctionRef]) -> float:
    """Sampled seconds of toolchain setup in ``stacks`` (the compiler frames of each)."""
    ids = toolchain_ids(functions)
    return sum(st.seconds for st in stacks if not ids.isdisjoint(st.compiler)) if ids else 0.0


#: the part of toolchain setup that a later process on the same machine skips: the C++ builds of
#: the ISA probe (kept in Inductor's cache folder and reused when the file is there) and of the
#: precompiled header (kept in the temp folder). What is left, the probe's load test in a child
#: process and the Python around it, every process pays. A torch without these names (before 2.5)
#: shows none, and its whole setup counts as paid again. Measured (bench_first_screen --toolchain):
#: an estimate of 0.38-0.52 s against 0.65-0.69 s that the next run paid.
ONE_TIME_FRAMES: tuple[tuple[str, str | None], ...] = (
    ("torch/_inductor/cpp_builder.py", "build"),
    ("torch/_inductor/codecache.py", "_precompile_header"),
)


def repaid_seconds(stacks: list[Stack], functions: list[FunctionRef]) -> float:
    """Sampled seconds of toolchain setup that the next run on this machine pays again (all of it
    but ``ONE_TIME_FRAMES``)."""
    setup = toolchain_ids(functions)
    if not setup:
        return 0.0
    once = frozenset(i for i, f in enumerate(functions) if _among(f, ONE_TIME_FRAMES))
    return sum(st.seconds for st in stacks if not setup.isdisjoint(st.compiler) and once.isdisjoint(st.compiler))
