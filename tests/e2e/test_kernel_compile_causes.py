"""Kernel compile time goes to the kernel being compiled, on a real Inductor compile: built in
process (one compile thread) or in workers (two), each C++ kernel's build seconds land on its own
kernel's cause, and the work counts are the same either way (the rules themselves, on hand-built
waits: ``tests/unit/test_kernel_waits.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynaprof.model.journal import KERNEL_CAUSE
from dynaprof.model.session import CAUSE_PARAMETRIZATION, CAUSE_TOOLCHAIN, UNNAMED_CAUSES

_KERNELS = """
import torch
from torch import nn
from torch.nn.utils import parametrize

class Double(nn.Module):
    def forward(self, w):
        return w * 2 + 1

m = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32))
for layer in (m[0], m[2]):
    parametrize.register_parametrization(layer, "weight", Double())

def step(x):
    return torch.sigmoid(m(x)) * 3

with torch.no_grad():
    print(torch.compile(step, backend="inductor")(torch.randn(4, 32)).shape)
"""


@pytest.mark.torch
@pytest.mark.inductor
def test_kernel_compile_keeps_its_cause_in_process_and_in_a_worker(tmp_path: Path) -> None:
    """One compile thread builds each C++ kernel in process, inside the generated module's
    ``async_compile`` call (and pays the toolchain setup there); two build them in worker threads
    while the compile waits. Either way the kernels' compile seconds go to their kernels' causes."""
    import torch

    from dynaprof.model import load_session
    from tests.conftest import run_dynaprof

    # torch 2.4 runs parametrizations for real while compiling (no kernel of theirs) and counts no IR nodes
    torch25 = tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 5)
    script = tmp_path / "kernels.py"
    script.write_text(_KERNELS)
    cache = tmp_path / "inductor-cache"  # the precompiled header survives FORCE_DISABLE_CACHES
    work = []
    for threads in ("1", "2"):
        env = {"TORCHINDUCTOR_CACHE_DIR": str(cache), "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1",
               "TORCHINDUCTOR_COMPILE_THREADS": threads}
        out = tmp_path / f"run-{threads}"
        # with two threads, also the counterfactual run: w folded, no kernel of its own is left;
        # no Inductor replay (tests/e2e/test_replay.py has it): it would only add its process' time
        more = ["--no-replay", *(["--counterfactual"] if threads == "2" and torch25 else [])]
        proc = run_dynaprof(["run", "-o", str(out), *more, str(script)], cwd=tmp_path, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        s = load_session(out)
        assert s.axes is not None
        kernel = s.axes.matrix.get("kernel_compile", {})
        total = sum(kernel.values())
        assert total > 0, (threads, s.axes.matrix)
        # two kernels: the parametrization's (w * 2 + 1) and step's (sigmoid, * 3); each build
        # is its kernel's, not whole graph's or unknown
        named = sum(v for c, v in kernel.items() if c not in UNNAMED_CAUSES)
        assert named >= 0.8 * total, (threads, kernel)
        assert any(c.startswith("step (kernels.py:") for c in kernel), kernel
        if torch25:
            assert kernel.get(CAUSE_PARAMETRIZATION, 0.0) > 0, kernel
        (f,) = s.frames
        assert f.kernel_wait_unmeasured_s <= 0.2 * total, (threads, f.kernel_wait_unmeasured_s, kernel)
        # every kernel's own cause (``kernel`` records) was given to its owner by the assembler
        assert s.samples is not None and not [st for st in s.samples.stacks
                                              if 0 <= st.cause < len(s.functions)
                                              and s.functions[st.cause].kind == KERNEL_CAUSE]
        work.append((f.aot_graph_ops, f.inductor_ir_nodes, f.inductor_kernels, f.kernels_defined))
        if "--counterfactual" in more:
            cf = s.counterfactual
            assert cf is not None and cf.folded == ["Linear.weight via Double"] * 2, cf  # m, a global of step
            # step's kernels have their counterparts there; the parametrization's kernel is gone
            assert cf.exit_status == 0 and cf.kernels == cf.kernels_here - 1 and cf.extra_kernels == 0, cf
            assert f.kernels_defined == cf.kernels_here  # one count of kernels for the frame and the check
        if threads == "1":  # the first C++ kernel of the cache dir: the ISA probe and the header,
            # which either kernel would have needed
            owners = set(s.axes.matrix.get("toolchain_setup", {}))
            if torch25:
                assert owners == {CAUSE_TOOLCHAIN}, s.axes.matrix
            else:  # step's is the only kernel, so the setup is step's (the rule: the one cause)
                assert len(owners) == 1 and next(iter(owners)).startswith("step (kernels.py:"), s.axes.matrix

    # exact work counts: what Inductor was handed and made, the same on both runs (two kernels)
    assert work[0] == work[1], work
    ops, ir_nodes, kernels, defined = work[0]
    assert ops is not None and ops >= 4
    if torch25:
        assert ir_nodes is not None and ir_nodes >= 2 and kernels is not None and kernels >= 2
        assert defined is not None and 2 <= defined <= kernels  # each kernel once; generated: variants too
