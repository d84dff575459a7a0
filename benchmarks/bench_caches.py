"""Warm starts measured: cold, warm, and warm after one config change, and what the cache hooks cost.

For each model, three ``dynaprof run``s with one fresh ``TORCHINDUCTOR_CACHE_DIR``: cold (empty),
warm (the same run again), and warm with one Inductor config value changed
(``TORCHINDUCTOR_SIZE_ASSERTS=0``). Each row: torch's compile time (the session's total), the
process's wall time, what the run says of its caches ("served from cache: N of M graphs, X s
saved"), and for the config change what ``dynaprof compare warm changed`` names first. Models: the
seed sample (``samples/parametrized_linear.py --backend inductor --device cpu``) and a library
model: ``torch.nn.TransformerEncoder`` (2 layers, d_model 64; torch's own, as transformers is not
installed in the project's venv).

``--cost`` measures the hooks themselves (``capture.cache_keys``), in one process under
``dynaprof.profile()``: the seconds spent reading each lookup's cache info (components parsed,
interned, journaled) and computing AOTAutograd's key components, against torch's compile time.
Timing the hooks directly gives their cost without process-to-process noise, which on a shared
2-core machine is larger than the cost itself. docs/caches.md keeps the figures.

    .venv/bin/python benchmarks/bench_caches.py                 # the warm-start table
    .venv/bin/python benchmarks/bench_caches.py --models --cost seed library   # the hooks' cost only
    .venv/bin/python benchmarks/bench_caches.py --models --kernels seed library training  # kernel code cache only

``--kernels`` runs each model twice more in a fresh cache folder with the FX graph cache off
(``TORCHINDUCTOR_FX_GRAPH_CACHE=0``, which turns the AOTAutograd cache off too): the warm run must
compile its graphs again, but the kernel code cache finds the kernels on disk. Each row: compile
and wall time, what the run says of its kernels, and what ``compare cold warm`` says the warm
run's kernel hits saved (the cold run's measured builds of the same keys).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.analysis.cache_misses import kernel_caches, kernels_served, misses_between, warm_start  # noqa: E402
from dynaprof.model.session import Session  # noqa: E402
from dynaprof.model.store import load_session  # noqa: E402

LIBRARY = textwrap.dedent("""\
    import torch

    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    with torch.no_grad():
        torch.compile(model, backend="inductor")(torch.randn(2, 16, 64))
""")
#: the cost probe compiles a second graph in the same process (a recompile for a new batch size)
SECOND = "    torch.compile(model, backend=\"inductor\", dynamic=False)(torch.randn(3, 16, 64))\n"
MODELS = {
    "seed": ("samples/parametrized_linear.py (32 x Linear(128), parametrized)",
             [str(ROOT / "samples" / "parametrized_linear.py"), "--backend", "inductor", "--device", "cpu"]),
    "library": ("torch.nn.TransformerEncoder (2 layers, d_model 64)", None),
    #: forward and lazy backward compiles: the most kernels of the three
    "training": ("samples/training_step.py (8 x Linear(64), parametrized, 2 SGD steps)",
                 [str(ROOT / "samples" / "training_step.py")]),
}
CHANGE = {"TORCHINDUCTOR_SIZE_ASSERTS": "0"}  # one Inductor config value: size_asserts True -> False
COST = textwrap.dedent("""\
    import json, sys, time
    import dynaprof
    from dynaprof.capture import cache_keys as ck
    spent = {"on_instant": 0.0, "compute_aot_lines": 0.0, "calls": 0, "aot_calls": [], "aot_compile_s": []}
    def timed(name):
        orig = getattr(ck.CacheKeyHooks, name)
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                spent[name] += time.perf_counter() - t
                spent["calls"] += 1
                if name == "compute_aot_lines":
                    spent["aot_calls"].append(time.perf_counter() - t)
        setattr(ck.CacheKeyHooks, name, wrapper)
    timed("on_instant"); timed("compute_aot_lines")
    out, script = sys.argv[1], sys.argv[2]
    sys.argv = sys.argv[2:]  # the model's own command line
    with dynaprof.profile(out, render=False, sampler="none") as p:
        exec(compile(open(script).read(), script, "exec"), {"__name__": "__main__"})
    s = dynaprof.load_session(out)
    spent["compile_s"] = s.total_compile_s
    spent["lookups"] = len([lk for lk in s.cache_keys.lookups if lk.cache != "dynamo"])
    spent["compiles"] = len(s.frames)
    spent["aot_compile_s"] = [f.compile_time_s for f in s.frames if f.compile_time_s]  # each compile's time
    print(json.dumps(spent))
""")


@dataclass
class Run:
    session: Session
    compile_s: float
    wall_s: float
    served: str  # what the run says of its caches


def _run(name: str, script: list[str], cwd: Path, env: dict[str, str]) -> Run:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dynaprof", "run", "-q", "-o", name, *script], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=3600)  # fmt: skip
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{name}: dynaprof run failed:\n{proc.stderr[-2000:]}")
    s = load_session(cwd / name)
    ws = warm_start(s)
    return Run(s, s.total_compile_s, wall, ws.line() if ws else "no lookup")


def table(model: str, tmp: Path) -> list[str]:
    label, script = MODELS[model]
    work = tmp / model
    work.mkdir(parents=True)
    if script is None:
        (work / "model.py").write_text(LIBRARY)
        script = [str(work / "model.py")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_CACHE_DIR": str(work / "cache")}
    cold = _run("cold", script, work, env)
    warm = _run("warm", script, work, env)
    changed = _run("changed", script, work, {**env, **CHANGE})
    why = misses_between(warm.session, changed.session)
    named = why[0].differences[0].words if why and why[0].differences else "(nothing named)"
    rows = []
    for case, r in (("cold", cold), ("warm", warm), ("warm, size_asserts=False", changed)):
        rows.append(f"| {label} | {case} | {r.compile_s:.2f} | {r.wall_s:.1f} | {r.served} |")
    rows.append(f"| {label} | config change: first named | | | {named} |")
    return rows


def kernels(model: str, tmp: Path) -> list[str]:
    """Cold, then warm with the FX graph cache off: the kernels found on disk."""
    label, script = MODELS[model]
    work = tmp / f"kernels-{model}"
    work.mkdir(parents=True)
    if script is None:
        (work / "model.py").write_text(LIBRARY)
        script = [str(work / "model.py")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_CACHE_DIR": str(work / "cache"),
           "TORCHINDUCTOR_FX_GRAPH_CACHE": "0"}  # fmt: skip
    cold = _run("cold", script, work, env)
    warm = _run("warm", script, work, env)
    served = kernels_served(cold.session, warm.session)
    rows = []
    for case, r in (("cold", cold), ("warm, FX graph cache off", warm)):
        says = "; ".join(k.line() for k in kernel_caches(r.session)) or "no kernel lookup"
        att = r.session.attribution  # sampled: the kernel builds and the C++ toolchain setup
        sampled = f"{att.get('kernel_compile', 0.0):.2f} / {att.get('toolchain_setup', 0.0):.2f}"
        rows.append(f"| {label} | {case} | {r.compile_s:.2f} | {sampled} | {r.wall_s:.1f} | {says} | {r.served} |")
    rows.append(f"| {label} | compare cold warm | | | | {served.line() if served else '(no kernel served)'} | |")
    return rows


def cost(tmp: Path, model: str) -> str:
    work = tmp / f"cost-{model}"
    work.mkdir(parents=True)
    (work / "model.py").write_text(LIBRARY.rstrip("\n") + "\n" + SECOND)
    (work / "cost.py").write_text(COST)
    script = ["model.py"] if model == "library" else MODELS["seed"][1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_CACHE_DIR": str(work / "cache")}
    out = []
    for case in ("cold", "warm"):
        proc = subprocess.run([sys.executable, "cost.py", str(work / case), *script], cwd=work, env=env,
                              capture_output=True, text=True, timeout=3600)  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"cost: failed:\n{proc.stderr[-2000:]}")
        d = json.loads(proc.stdout.strip().splitlines()[-1])
        hooks = d["on_instant"] + d["compute_aot_lines"]
        each = ", ".join(f"{x * 1e3:.1f}" for x in d["aot_calls"])
        times = ", ".join(f"{x:.2f}" for x in d["aot_compile_s"])
        out.append(f"{model}, {case}: {d['lookups']} lookups in {d['compiles']} compiles, hooks {hooks * 1e3:.1f} ms "
                   f"(reading cache info {d['on_instant'] * 1e3:.1f} ms, AOTAutograd components "
                   f"{d['compute_aot_lines'] * 1e3:.1f} ms: {each or 'none'} ms per call) "
                   f"of {d['compile_s']:.2f} s compile ({hooks / d['compile_s']:.2%}; each compile {times} s); "
                   f"components alone {d['compute_aot_lines'] / d['compile_s']:.2%}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="*", default=["seed", "library"], choices=list(MODELS))
    ap.add_argument("--cost", nargs="*", choices=list(MODELS), help="also time the cache hooks themselves, "
                    "on these models (default: none)")
    ap.add_argument("--kernels", nargs="*", choices=list(MODELS), help="also the kernel code cache: cold, then "
                    "warm with the FX graph cache off, on these models (default: none)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-caches-") as d:
        tmp = Path(d)
        if args.models:
            print("| model | run | compile (s) | wall (s) | the run says |")
            print("| --- | --- | ---: | ---: | --- |")
        for model in args.models:
            for row in table(model, tmp):
                print(row, flush=True)
        if args.kernels:
            print("\n| model | run | compile (s) | kernel compile / toolchain setup, sampled (s) | wall (s) "
                  "| kernel code cache | graphs |")
            print("| --- | --- | ---: | ---: | ---: | --- | --- |")
        for model in args.kernels or []:
            for row in kernels(model, tmp):
                print(row, flush=True)
        for model in args.cost or []:
            print()
            print(cost(tmp, model), flush=True)
    print(f"\nmachine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
