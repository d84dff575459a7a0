"""What a finding suggests trying, in one line each: every remedy here was applied to a sample by
``benchmarks/bench_causes.py`` and its saving measured (``docs/causes.md``, "Remedies, applied")."""

from __future__ import annotations

REMEDY_FOLD = (
    "for inference, fold the parametrizations in before compiling: torch.nn.utils.parametrize."
    "remove_parametrizations(module, name, leave_parametrized=True)"
)
#: said after ``REMEDY_FOLD`` where peft's code is in the session (its own way to fold)
PEFT_FOLD = " (peft: merge_and_unload())"
REMEDY_GC_FREEZE = (
    "once the model is built, call gc.freeze() before the first compile: what is alive then is never "
    "walked again (nor freed)"
)
REMEDY_UNWRAP = (
    "torchao's unwrap_tensor_subclass is meant for torch.export: compile the quantized model as it is"
)
REMEDY_REGISTER_OUTSIDE = (
    "register parametrizations once, outside the compiled forward (peft: merge_and_unload() for inference)"
)
REMEDY_FOLD_RECOMPILES = (
    "for inference, fold the parametrizations in (torch.nn.utils.parametrize.remove_parametrizations(module, name, "
    "leave_parametrized=True)): the modules get their class back, though other guards may still fail per module; "
    "for training no remedy is known"
)
REMEDY_DYNAMIC = (
    "the size changes between calls: torch._dynamo.mark_dynamic(tensor, dim) or torch.compile(..., dynamic=True)"
)
