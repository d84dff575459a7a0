"""What a parametrization adds to C++ kernel compile: more kernels, or bigger ones?

Runs a model's parametrized and plain variants cold under ``dynaprof run`` (Inductor, default
compile threads, each with its own cache dir, as ``bench_kernel_causes.py`` does), then takes every
C++ kernel out of the two runs' output code and compiles each alone, in one process, the two
variants' kernels interleaved, the minimum of ``--rounds`` builds (a comment makes each round's
source new, so it is really compiled; the toolchain setup is paid once before). That separates the
two things a fused parametrization can cost: kernels it adds (its own, or ones Inductor builds
because fusion changed) and the size it adds to kernels the plain model builds too. dynaprof's
split (``ingest/kernel_split.py``) can see only the second from one run.

    /path/to/venv-with-transformers/bin/python benchmarks/bench_kernel_sizes.py --rounds 4
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from bench_kernel_causes import MODELS, cold_env, profile  # noqa: E402

#: compiles each kernel given on stdin ([[label, name, argtypes, source], ...]) alone; prints JSON
_TIMER = r"""
import json, sys, time
from torch._inductor.codecache import CppPythonBindingsCodeCache as C
kernels, rounds = json.load(sys.stdin), int(sys.argv[1])
C.load_pybinding(kernels[0][2], kernels[0][3] + "\n// toolchain setup, once\n")
best = {}
for r in range(rounds):
    for label, name, argtypes, src in kernels:
        t0 = time.perf_counter()
        C.load_pybinding(argtypes, src + f"\n// round {r} {time.time()}\n")
        key = (label, name)
        best[key] = min(best.get(key, 1e9), time.perf_counter() - t0)
print(json.dumps([[k[0], k[1], v] for k, v in best.items()]))
"""


def cpp_kernels(cache: Path) -> list[tuple[str, list[str], str]]:
    """(name, argtypes, source) of every ``async_compile.cpp_pybinding`` kernel in a run's output code."""
    out = []
    for path in sorted(cache.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            call = node.value if isinstance(node, ast.Assign) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and call.func.attr == "cpp_pybinding" and isinstance(node, ast.Assign):
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    out.append((target.id, ast.literal_eval(call.args[0]), ast.literal_eval(call.args[1])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="hifigan_weight_norm", choices=sorted(MODELS))
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    _, param_cmd, plain_cmd = MODELS[args.model]
    with tempfile.TemporaryDirectory(prefix="dynaprof-kernel-sizes-") as d:
        tmp = Path(d)
        sessions, kernels = {}, []
        for label, cmd in (("parametrized", param_cmd), ("plain", plain_cmd)):
            sessions[label] = profile(cmd, tmp / label, "default")
            kernels += [[label, *k] for k in cpp_kernels(tmp / f"{label}-state" / "cache")]
        env = cold_env(tmp / "timer")
        proc = subprocess.run([sys.executable, "-c", _TIMER, str(args.rounds)], input=json.dumps(kernels),
                              capture_output=True, text=True, env=env, check=True)
        best = json.loads(proc.stdout)
    by: dict[str, list[float]] = {}
    for label, _, secs in best:
        by.setdefault(label, []).append(secs)
    rows = ["| variant | C++ kernels | built alone, sum | mean | fastest / slowest | fused kernels (dynaprof) "
            "| parametrization's kernel compile (dynaprof) |", "|---|---|---|---|---|---|---|"]
    for label in ("parametrized", "plain"):
        xs, s = by.get(label, []), sessions[label]
        fused = sum(f.fused_kernels for f in s.frames)
        kc = s.axes.matrix.get("kernel_compile", {}).get("parametrization", 0.0) if s.axes else 0.0
        rows.append(f"| {label} | {len(xs)} | {sum(xs):.2f} s | {statistics.mean(xs) if xs else 0:.3f} s "
                    f"| {min(xs, default=0):.3f} s / {max(xs, default=0):.3f} s | {fused} | {kc:.2f} s |")
    p, q = by.get("parametrized", []), by.get("plain", [])
    if p and q:
        added = sum(p) - sum(q)
        extra = (len(p) - len(q)) * statistics.mean(q)
        rows += ["", f"- added build seconds (kernels built alone): {added:.2f} s; "
                     f"{len(p) - len(q)} more kernels at the plain model's mean: {extra:.2f} s; "
                     f"the rest (bigger kernels, and noise): {added - extra:.2f} s"]
    print("\n".join(rows))


if __name__ == "__main__":
    main()
