"""Overhead of sampling the lazy backward compile: the sample's own timer of the first
``.backward()`` (which compiles the backward graph), under plain ``python`` and ``dynaprof run``.

    .venv/bin/python benchmarks/bench_training.py [--backend aot_eager] [--repeat 3] [--layers 32]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "training_step.py"
_STEP0 = re.compile(r"step 0: forward ([\d.]+) s, backward ([\d.]+) s")


def first_step(cmd: list[str]) -> tuple[float, float]:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    m = _STEP0.search(out.stdout)
    if m is None:
        raise SystemExit(f"no timing in the sample's output: {out.stdout[-500:]}")
    return float(m.group(1)), float(m.group(2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="aot_eager")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--layers", type=int, default=32)
    args = p.parse_args()
    sample = [str(SAMPLE), "--no-parametrize", "--backend", args.backend, "--layers", str(args.layers), "--steps", "1"]
    plain, profiled = [], []
    for _ in range(args.repeat):
        plain.append(first_step([sys.executable, *sample])[1])
        with tempfile.TemporaryDirectory() as tmp:
            profiled.append(first_step([sys.executable, "-m", "dynaprof", "run", "-o", tmp + "/run", *sample])[1])
    a, b = statistics.median(plain), statistics.median(profiled)
    print(f"first backward ({args.backend}, {args.layers} layers, median of {args.repeat}): "
          f"python {a:.3f} s, dynaprof run {b:.3f} s, overhead {100 * (b - a) / a:+.1f}%")


if __name__ == "__main__":
    main()
