"""Capture hooks against real torch, in a fresh interpreter: the traced stack and the attempt index
come from the hooks around Dynamo's translator loop, never from frame locals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from tests.conftest import ROOT, SAMPLES
from tests.helpers import requires_torch, torch_version_text

pytestmark = [pytest.mark.torch, pytest.mark.versions]

_SCRIPT = textwrap.dedent(
    """
    import json, sys, threading
    sys.path.insert(0, {samples!r})
    import torch
    from dynaprof.capture.stacks import FunctionTable
    from dynaprof.capture.torch_hooks import Recorder

    records = []
    rec = Recorder(records.append, 0, FunctionTable())
    rec.install(inline_profile=False)
    at_attempt_start = []
    depths = []
    on_chromium = rec._on_chromium

    def spy(event):
        name = str(event.get("name"))
        win = rec.current(threading.get_ident())
        if event.get("ph") == "B" and name.startswith("compile_attempt_") and win is not None:
            at_attempt_start.append([int(name[16:]), win.root_runs])
        if win is not None:
            depths.append(rec.traced.depth(threading.get_ident()))
        return on_chromium(event)

    rec._on_chromium = spy
    import restart_analysis
    fn = torch.compile(restart_analysis.forward, backend="eager")
    fn(torch.randn(8, 8), 5)
    ends = [[r["key"], r["attempt"]] for r in records if r.get("t") == "compile_end"]
    print(json.dumps({{"hooks": rec.hooks, "starts": at_attempt_start, "ends": ends,
                       "left": rec.traced.depth(threading.get_ident()), "max_depth": max(depths, default=None)}}))
    """
)


@pytest.fixture(scope="module")
def attempts() -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(samples=str(SAMPLES))],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got


def test_attempts_counted_from_root_translator_runs(attempts: dict[str, Any]) -> None:
    assert "traced_stack" in attempts["hooks"]
    assert [a for _, a in attempts["ends"]] == [1, 1, 0, 0]  # 0/0 and 1/0 restart once, the resumes do not
    assert attempts["left"] == 0  # empty after the compiles


@requires_torch("2.5", "torch 2.4 has no phase events (compile_attempt_N) to compare the count with")
def test_attempts_counted_from_root_translator_runs_agree_with_torch(attempts: dict[str, Any]) -> None:
    # at torch's "compile_attempt_N" begin, N root translators have run in that compile
    assert attempts["starts"] and all(n == runs for n, runs in attempts["starts"])
    assert any(n == 1 for n, _ in attempts["starts"]), "the sample restarts once"
    assert attempts["max_depth"] >= 1  # pushed while tracing


_INSTALL = textwrap.dedent(
    """
    import json
    import torch
    from dynaprof.capture.stacks import FunctionTable
    from dynaprof.capture.torch_hooks import STEPS, Recorder

    records = []
    rec = Recorder(records.append, 0, FunctionTable())
    rec.install(inline_profile=True)
    torch.compile(lambda x: x.sin() + 1, backend="aot_eager")(torch.randn(4))
    warnings = [r["msg"] for r in records if r.get("t") == "warn"]
    print(json.dumps({"steps": [n for n, _ in STEPS] + ["dynamo_profiler"], "hooks": rec.hooks,
                      "warnings": warnings}))
    """
)
#: steps that leave themselves out without a warning where there is nothing to hook (no CPU
#: instruction counter on this machine; DDP not imported on a torch without phase events; the
#: parametrized module calls where the properties hook names the parametrization, torch 2.5+)
SILENT = {"instruction_counter", "ddp_buckets", "parametrized_calls"}


def test_every_hook_installs_or_says_why_not_naming_the_torch() -> None:
    """Each installer of ``torch_hooks.STEPS`` on this torch: installed, or a warning naming the
    step and the torch version (its facts then unknown); and every step whose private names this
    torch has (``torch_private.PRIVATE_NAMES``) installs."""
    from dynaprof.capture.torch_private import PRIVATE_NAMES, has_private_name

    proc = subprocess.run([sys.executable, "-c", _INSTALL], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    version = torch_version_text()
    said = [w for w in got["warnings"] if w.startswith(f"torch {version}")]
    unexplained = [s for s in got["steps"] if s not in got["hooks"] and s not in SILENT
                   and not any(f": {s} not captured" in w for w in said)]
    assert unexplained == [], got["warnings"]
    has_all = {s for s in got["steps"]
               if all(has_private_name(n.name) for n in PRIVATE_NAMES if n.used_by == s and not n.optional)}
    assert sorted(has_all - set(got["hooks"]) - SILENT) == [], got["warnings"]
    assert {"compile_windows", "metrics", "traced_stack", "inlines", "calls", "markers"} <= set(got["hooks"])


_DEPTH_PROBE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import torch
    import dynaprof
    from dynaprof.capture.stacks import FunctionTable
    from dynaprof.capture.torch_hooks import Recorder

    rec = Recorder([].append, 0, FunctionTable())
    rec.install(inline_profile=False)
    ours = str(Path(dynaprof.__file__).parent)
    seen = {{}}

    def probe(x):  # in the graph: Dynamo runs it on fake tensors while it traces the innermost call
        f, n = sys._getframe(1), 0
        while f is not None:
            n += f.f_code.co_filename.startswith(ours)
            f = f.f_back
        seen[depth] = max(n, seen.get(depth, 0))  # the graph calls it again at run time
        return x + 1

    torch.compiler.allow_in_graph(probe)

    def nest(k):
        def call(x):
            return probe(x) if k == 0 else nest(k - 1)(x)
        return call

    for depth in {depths}:
        torch._dynamo.reset()
        torch.compile(nest(depth), backend="eager")(torch.randn(4))
    print(json.dumps({{"seen": seen, "hooks": rec.hooks, "getters": rec.on_getter_push is not None}}))
    """
)


def test_no_frame_of_ours_per_inlining_level() -> None:
    """While Dynamo traces a call N inlined levels deep, the stack holds as many of dynaprof's frames
    at N = 12 as at N = 1: a frame per level moves CPython 3.11's frame-stack chunk boundaries,
    which costs a plain compile up to a fifth of its time (docs/performance.md)."""
    script = _DEPTH_PROBE.format(depths=[1, 12])
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"traced_stack", "inlines"} <= set(got["hooks"])
    assert set(got["seen"]) == {"1", "12"}, got  # the probe ran at both depths
    assert got["seen"]["12"] == got["seen"]["1"], got["seen"]


_PROPERTY_PROBE = _DEPTH_PROBE.replace(
    """def nest(k):
    def call(x):
        return probe(x) if k == 0 else nest(k - 1)(x)
    return call
""",
    # a class whose property p{k} reads p{k-1} ... and p0 calls the probe ({{ }}: the template is formatted)
    """def nest(k):
    src = "class C:\\n    def __init__(self, x):\\n        self.x = x\\n"
    src += "    @property\\n    def p0(self):\\n        return probe(self.x)\\n"
    for i in range(1, k + 1):
        src += f"    @property\\n    def p{{i}}(self):\\n        return self.p{{i - 1}}\\n"
    space = {{"probe": probe}}
    exec(src, space)
    C = space["C"]
    return lambda x: getattr(C(x), f"p{{k}}")
""",
)


def test_no_frame_of_ours_per_property_level() -> None:
    """The same for properties: a getter that reads a property 8 levels deep is traced with as many
    of dynaprof's frames on the stack as one level deep (``hooks.properties`` opens and closes a
    property at its getter's push and pop, not from a wrapper round its resolution)."""
    assert _PROPERTY_PROBE != _DEPTH_PROBE
    script = _PROPERTY_PROBE.format(depths=[1, 8])
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if not got["getters"]:  # torch < 2.5: the legacy walker; 2.5 .. 2.12: the resolution is wrapped
        pytest.skip(f"torch {torch_version_text()} has no _is_c_defined_property to mark a getter by")
    assert "properties" in got["hooks"]
    assert set(got["seen"]) == {"1", "8"}, got
    assert got["seen"]["8"] == got["seen"]["1"], got["seen"]


_SETUP_PROBE = textwrap.dedent(
    """
    import json, threading
    import torch
    from dynaprof.capture.stacks import FunctionTable
    from dynaprof.capture.torch_hooks import Recorder
    from torch._dynamo.symbolic_convert import InliningInstructionTranslator as IIT

    table = FunctionTable()
    rec = Recorder([].append, 0, table)
    rec.install(inline_profile=False)
    seen = []
    orig = IIT.check_inlineable

    def check_inlineable(func, *a, **k):  # Dynamo's set-up of an inlined call, before its push
        if getattr(getattr(func, "fn", None), "__name__", "") == "p":
            top = rec.traced.top(threading.get_ident())
            seen.append(list(table.info[top]) if top >= 0 else None)
        return orig(func, *a, **k)

    IIT.check_inlineable = staticmethod(check_inlineable)

    class C:
        def __init__(self, x):
            self.x = x

        @property
        def p(self):
            return self.x + 1

    torch.compile(lambda x: C(x).p * 2, backend="eager")(torch.randn(4))
    print(json.dumps({"seen": seen, "hooks": rec.hooks}))
    """
)


def test_a_property_is_open_while_dynamo_sets_up_its_getter() -> None:
    """Dynamo's set-up of a property's getter (the check that it may inline it, the tracer it
    builds) runs before the getter's push: it is the property's work, so the property is already
    innermost on the traced stack then (opened pending at ``_is_c_defined_property``). Opened at
    the push instead, the parametrized seed gave its parametrizations 71% of eager compile rather
    than 76% (``docs/causes.md``, "Re-measured after the getter hooks")."""
    proc = subprocess.run([sys.executable, "-c", _SETUP_PROBE], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if "properties" not in got["hooks"]:
        pytest.skip(f"torch {torch_version_text()}: the legacy walker labels properties")
    assert len(got["seen"]) == 1 and got["seen"][0][0] == "C.p" and got["seen"][0][3] == "property", got
