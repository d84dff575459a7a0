"""The one way into torch's private modules, and what torch says of its own version."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _private(module: str) -> Any:
    """Import a torch-internal module, typed as Any: these APIs are private and move. Every
    caller guards its use (a moved name is a warning naming the torch version, never an error)."""
    return importlib.import_module(module)


def torch_version() -> str:
    """``torch.__version__`` of the imported torch ("?" before it is imported)."""
    torch = sys.modules.get("torch")
    return str(getattr(torch, "__version__", "?"))


def torch_git_version() -> str | None:
    """``torch.version.git_version``, the commit torch was built from (None where it is missing)."""
    version = getattr(sys.modules.get("torch"), "version", None)
    git = getattr(version, "git_version", None)
    return git if isinstance(git, str) and git and git != "Unknown" else None


# -- the private names the hooks reach ------------------------------------------------------------


@dataclass(frozen=True)
class PrivateName:
    """One name of torch's internals that capture reaches, and what loses its facts without it.
    ``since`` / ``until``: the first torch release that has it / no longer has it, where dynaprof
    supports a torch without it (the hook then warns, or uses another spelling); where no release
    between two checked ones was looked at, ``since`` is the one after the older. ``optional``: read
    where some torch has it, and no loss where none does."""

    name: str
    used_by: str
    since: str | None = None
    until: str | None = None
    optional: bool = False

    def expected(self, version: str) -> bool:
        """Whether torch ``version`` should have the name."""
        if self.optional:
            return False
        v = release(version)
        return (self.since is None or v >= release(self.since)) and (self.until is None or v < release(self.until))


def _names(
    used_by: str, *names: str, since: str | None = None, until: str | None = None, optional: bool = False
) -> tuple[PrivateName, ...]:
    return tuple(PrivateName(n, used_by, since, until, optional) for n in names)


_CF = "torch._dynamo.convert_frame"
_SC = "torch._dynamo.symbolic_convert"
_DU = "torch._dynamo.utils"
_INTERNAL = "torch._logging._internal"
_OG = "torch._dynamo.output_graph.OutputGraph"
#: every private name of torch the capture layer reaches (``_private`` modules and the attributes
#: it reads or patches of them, the modules it waits for in ``sys.modules``), by the hook step
#: (``torch_hooks.STEPS``) or capture module that needs it. ``tests/unit/test_private_names.py``
#: keeps it complete against the code; ``scripts/torch_names.py`` says which a torch lacks.
PRIVATE_NAMES: tuple[PrivateName, ...] = (
    *_names("compile_windows", f"{_CF}._compile", f"{_DU}.counters"),
    *_names("phases", f"{_DU}.record_chromium_event_internal", since="2.5"),
    *_names("metrics", f"{_DU}.log_compilation_event", "torch._guards.CompileContext.current_trace_id"),
    *_names("reset", "torch._dynamo.reset"),
    *_names("properties", "torch._dynamo.variables.user_defined.UserDefinedObjectVariable.resolve_data_descriptor",
            since="2.5"),
    *_names("properties", "torch._dynamo.variables.user_defined.UserDefinedObjectVariable._is_c_defined_property",
            optional=True),  # older torch: the resolution is wrapped instead
    *_names("parametrized_calls", "torch._dynamo.variables.nn_module.NNModuleVariable.call_function"),
    *_names("traced_stack", f"{_OG}.push_tx", f"{_OG}.pop_tx"),
    *_names("provenance", "torch.fx.interpreter.Interpreter._set_current_node",
            "torch._inductor.graph.GraphLowering.set_current_node",
            "torch._inductor.scheduler.Scheduler.create_scheduler_node",
            "torch._inductor.codegen.cpp", "torch._inductor.codegen.triton",
            "torch._inductor.codegen.simd", "torch._inductor.async_compile.AsyncCompile.submit",
            "torch._inductor.async_compile.AsyncCompile.cpp", "torch._inductor.async_compile.AsyncCompile.triton"),
    *_names("provenance", "torch._inductor.async_compile.AsyncCompile._wait_futures", since="2.5"),
    *_names("kernel_cache", "torch._inductor.codecache.write", "torch._inductor.codecache.CppCodeCache",
            "torch._inductor.codecache._worker_compile_cpp"),
    *_names("guard_causes", "torch._guards.Guard.create"),
    *_names("inlines", f"{_OG}.push_tx", f"{_OG}.pop_tx"),
    *_names("graph_breaks", "torch._guards.TracingContext.extract_stack",
            "torch._dynamo.output_graph.OutputGraph.compile_subgraph"),  # the sites where log_graph_break is missing
    *_names("graph_breaks", f"{_SC}.InstructionTranslatorBase.log_graph_break",
            "torch._dynamo.config.nested_graph_breaks", since="2.5"),
    *_names("recompile_reasons", f"{_CF}.get_and_maybe_log_recompilation_reason", until="2.6"),
    *_names("recompile_reasons", f"{_CF}.get_and_maybe_log_recompilation_reasons", since="2.6"),
    *_names("ddp_buckets", "torch._dynamo.backends.distributed.SubmodCompiler.compile_submod",
            "torch._dynamo.backends.distributed.pretty_print_buckets"),
    *_names("calls", "torch._dynamo.decorators.disable",
            "torch._dynamo.output_graph.OutputGraph.compile_and_call_fx_graph"),
    *_names("calls", "torch._dynamo.output_graph.disable", optional=True),  # where imported at module level
    *_names("markers", f"{_SC}.InstructionTranslatorBase.run"),
    *_names("cache_keys", "torch._logging.trace_structured", f"{_DU}.CompilationMetrics"),
    *_names("cache_keys", f"{_DU}.ChromiumEventLogger.log_instant_event", since="2.5"),
    *_names("cache_keys", "torch._functorch._aot_autograd.autograd_cache"),
    *_names("cache_keys", "torch._dynamo.pgo.get_local_code_state", since="2.6"),
    *_names("work_counts", "torch._inductor.metrics.generated_kernel_count",
            "torch._inductor.metrics.ir_nodes_pre_fusion"),
    *_names("work_counts", "torch._inductor.compile_fx._compile_fx_inner", since="2.5"),
    *_names("work_counts", "torch._inductor.compile_fx.fx_codegen_and_compile"),  # wrapped where the above is missing
    *_names("aot_graphs", "torch._dynamo.backends.common.aot_module_simplified",
            "torch._dynamo.backends.common.AotAutograd", "torch._dynamo.eval_frame.skip_code"),
    *_names("aot_graphs", "torch._functorch._aot_autograd.schemas.SerializableAOTDispatchCompiler", since="2.6"),
    *_names("instruction_counter", "torch._C._instruction_counter.start", "torch._C._instruction_counter.end",
            since="2.5"),
    *_names("dynamo_profiler", "torch._dynamo.config.dynamo_profiler",
            "torch._dynamo.dynamo_profiler.DynamoProfilerState.dump_stats", since="2.5"),
    *_names("torch_config", "torch._dynamo.config._config", "torch._inductor.config._config",
            "torch._functorch.config._config"),
    *_names("cprofile", "torch._dynamo.config.cprofile"),
    *_names("fold", "torch._dynamo.eval_frame.OptimizeContext.__call__"),
    *_names("replay_graphs", "torch._inductor.compile_fx.compile_fx", "torch._library.custom_ops.OPDEFS"),
    *_names("replay", "torch._inductor.compile_fx.compile_fx", "torch._inductor.async_compile.AsyncCompile"),
    *_names("trace_export", f"{_INTERNAL}.LazyTraceHandler", f"{_INTERNAL}.TorchLogsFormatter",
            f"{_INTERNAL}.trace_log.handlers"),
    *_names("recorder", "torch._guards.CompileContext.current_compile_id"),
)


def release(version: str) -> tuple[int, ...]:
    """``"2.4.1+cu121"`` -> (2, 4, 1): the numbers before any local or pre-release suffix."""
    out = []
    for part in version.split("+")[0].split("."):
        digits = part[: len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        out.append(int(digits))
        if digits != part:
            break
    return tuple(out)


def has_private_name(name: str) -> bool:
    """Whether the installed torch has ``name``: its longest importable module prefix, then the
    rest as attributes. Imports the modules (never call it in a profiled process)."""
    parts = name.split(".")
    obj: Any = None
    i = 1
    while i <= len(parts):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:
            break
        i += 1
    if obj is None:
        return False
    for attr in parts[i - 1:]:
        try:
            obj = getattr(obj, attr)
        except Exception:
            return False
    return True


def private_name_report(
    version: str, names: tuple[PrivateName, ...] = PRIVATE_NAMES, has: Callable[[str], bool] = has_private_name
) -> tuple[list[str], int]:
    """One line saying how many of ``names`` torch ``version`` lacks, then one line per missing
    name: "missing" where that torch is not expected to have it (``since`` / ``until``), "BROKEN"
    where it is (a hook that will warn and leave its facts unknown). Returns the lines and the
    number of broken names."""
    missing = [n for n in names if not has(n.name)]
    broken = [n for n in missing if n.expected(version)]
    lines = [f"torch {version}: {len(names)} private names, {len(missing)} missing, {len(broken)} of them unexpected"]
    for n in missing:
        if n in broken:
            lines.append(f"BROKEN  {n.name} ({n.used_by})")
        else:
            when = "only some torches" if n.optional else f"torch {n.since}+" if n.since else f"before torch {n.until}"
            lines.append(f"missing {n.name} ({n.used_by}; {when})")
    return lines, len(broken)
