"""The recorder with torch's hooks installed. Torch 2.4 through 2.13+.

Each hook is one module of ``capture/hooks/`` (the module says what it hooks and what it records),
installed in the order of ``Recorder.install``'s steps; each one optional: what could not be
installed is reported as a warning naming the torch version and the facts it would have given
are recorded as unknown. The windows they record into are ``capture.recorder``'s; what is
measured at the end of a compile or of the run: the guard trees and guard code
(``capture.guard_sizes``), the calls of each compiled graph (``hooks.calls``), the compiler
settings that differ from their defaults (``capture.torch_config``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

from dynaprof.capture.cache_keys import install_cache_hooks
from dynaprof.capture.hooks.aot_graphs import install_aot_graphs
from dynaprof.capture.hooks.calls import install_calls
from dynaprof.capture.hooks.compile_windows import install_compile_windows
from dynaprof.capture.hooks.current_node import install_node_causes
from dynaprof.capture.hooks.ddp import install_ddp_buckets
from dynaprof.capture.hooks.dynamo_profiler import install_dynamo_profiler
from dynaprof.capture.hooks.graph_breaks import install_graph_breaks
from dynaprof.capture.hooks.guard_causes import install_guard_causes
from dynaprof.capture.hooks.inlines import install_inlines
from dynaprof.capture.hooks.instructions import install_instruction_counter
from dynaprof.capture.hooks.markers import install_markers
from dynaprof.capture.hooks.metrics import install_metrics
from dynaprof.capture.hooks.parametrized_calls import install_parametrized_calls
from dynaprof.capture.hooks.phase_spans import install_phases
from dynaprof.capture.hooks.properties import install_properties
from dynaprof.capture.hooks.recompile_reasons import install_recompile_reasons
from dynaprof.capture.hooks.reset import install_reset
from dynaprof.capture.hooks.traced_stack import install_traced_stack
from dynaprof.capture.hooks.work_counts import install_work_counts
from dynaprof.capture.recorder import CompileRecorder, NotHooked
from dynaprof.capture.torch_private import torch_git_version, torch_version
from dynaprof.model.journal import PROVENANCE_HOOK, Torch

#: (name in the ``hooks`` record, installer), in the order they are installed: the DDP hook
#: needs to know whether the phase events are hooked, the markers the compile entry's code
STEPS: tuple[tuple[str, Callable[[CompileRecorder], None]], ...] = (
    ("compile_windows", install_compile_windows),
    ("phases", install_phases),
    ("metrics", install_metrics),
    ("reset", install_reset),
    ("properties", install_properties),
    ("parametrized_calls", install_parametrized_calls),  # after properties: only where it is missing
    ("traced_stack", install_traced_stack),
    (PROVENANCE_HOOK, install_node_causes),
    ("guard_causes", install_guard_causes),
    ("inlines", install_inlines),
    ("graph_breaks", install_graph_breaks),
    ("recompile_reasons", install_recompile_reasons),
    ("ddp_buckets", install_ddp_buckets),
    ("calls", install_calls),
    ("markers", install_markers),
    ("cache_keys", install_cache_hooks),
    ("work_counts", install_work_counts),
    ("aot_graphs", install_aot_graphs),
    ("instruction_counter", install_instruction_counter),
)


#: a comma-separated subset of ``STEPS`` to install, for measuring each hook alone
#: (``benchmarks/bench_overhead.py --per-hook``); ``compile_windows`` is always installed, as every
#: other hook records into its windows. Unset: every hook.
ONLY_HOOKS_ENV = "DYNAPROF_HOOKS"


def chosen_steps(inline_profile: bool, only: str | None = None) -> list[tuple[str, Callable[[CompileRecorder], None]]]:
    """The installers to run: ``STEPS`` (and torch's Dynamo profiler with ``inline_profile``), or
    the subset ``only`` names (``ONLY_HOOKS_ENV``)."""
    steps = list(STEPS)
    if inline_profile:
        steps.append(("dynamo_profiler", install_dynamo_profiler))
    if only is None:
        return steps
    names = {n.strip() for n in only.split(",")} | {"compile_windows"}
    return [(n, f) for n, f in steps if n in names]


class Recorder(CompileRecorder):
    """Owns the hooks and the per-thread compile windows of one profiled process."""

    def install(self, *, inline_profile: bool = True) -> None:
        """Install every hook (``STEPS``; torch's Dynamo profiler too with ``inline_profile``) and
        write the ``torch`` and ``hooks`` records, and a warning for each hook left out."""
        import torch  # noqa: F401  (the hooks patch its modules: import it before them)

        record: Torch = {"t": "torch", "version": torch_version()}
        git = torch_git_version()
        if git:
            record["git"] = git
        self.emit(record)
        only = os.environ.get(ONLY_HOOKS_ENV)
        for name, install in chosen_steps(inline_profile, only):
            self.install_step(name, functools.partial(install, self))
        if only is not None:
            self.warn(f"{ONLY_HOOKS_ENV}={only}: only these hooks were installed; the others' facts are unknown")
        self.emit({"t": "hooks", "items": self.hooks})
        self._knows_attempt = "phases" in self.hooks or "traced_stack" in self.hooks
        if "phases" not in self.hooks:  # torch 2.4
            backward = ("lazy backward compiles are found from AOT autograd's backward compiler instead"
                        if "aot_graphs" in self.hooks else
                        "nor are lazy backward compiles (at the first .backward()) sampled")
            self.warn(
                f"torch {torch_version()}: no phase events: phase times are unknown, and compiled autograd's "
                f"capture of the autograd graph is not a frame of its own (its time is in the compile it ran in); "
                f"{backward}"
            )

    def install_step(self, name: str, install: Callable[[], None]) -> None:
        """Run one installer: listed in ``hooks`` if it installed, a warning if it raised (a moved
        internal must not break the user's run), nothing if it left its hook out (``NotHooked``)."""
        try:
            install()
        except NotHooked:
            return
        except Exception as e:
            self.warn(f"torch {torch_version()}: {name} not captured ({type(e).__name__}: {e})")
            return
        self.hooks.append(name)
