"""Is a cold run's toolchain setup longer because of the parametrization, or because of when it ran?

``bench_kernel_causes.py`` found the parametrized HiFi-GAN's toolchain setup (the precompiled
header's build, the largest single phase of a cold CPU compile) 0.6-1.1 s longer than the plain
model's in most default-thread rounds. No cause holds that time, so it lowers the ratio there. This
runs the two variants without dynaprof (``causes/time_toolchain.py`` times the header's build), each
with a fresh ``TORCHINDUCTOR_CACHE_DIR`` and ``TMPDIR``, in balanced order (parametrized first in
odd rounds, plain first in even ones) and tells the two effects apart: by variant and by position
in the pair. It also checks both variants build the same header (its file name is a hash of the
header's preprocessed text and compile command).

    /path/to/venv-with-transformers/bin/python benchmarks/bench_toolchain_order.py --rounds 4
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_kernel_causes import MODELS, cold_env  # noqa: E402

TIMER = ROOT / "benchmarks" / "causes" / "time_toolchain.py"


def timed_run(script: list[str], threads: str, prefix: list[str] | None = None) -> tuple[list[dict[str, Any]], float]:
    """One cold run of ``script`` under ``causes/time_toolchain.py`` (after ``python *prefix``, which
    may be ``-m dynaprof run ...``; ``RUN_DIR`` in it becomes a folder of the run's own): the timed
    calls, and the run's wall seconds."""
    with tempfile.TemporaryDirectory(prefix="dynaprof-toolchain-") as d:
        env = cold_env(Path(d), threads)
        pre = [str(Path(d) / "run") if a == "RUN_DIR" else a for a in prefix or []]
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, *pre, str(TIMER), *script], capture_output=True, text=True,
                              env=env, cwd=ROOT)
        wall = time.perf_counter() - t
    line = next((x for x in proc.stderr.splitlines() if x.startswith("TOOLCHAIN ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"{' '.join(script)} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(line[len("TOOLCHAIN ") :]), wall


def run_once(script: list[str], threads: str) -> tuple[dict[str, Any], float]:
    """One cold run: (its header build's record, the run's wall seconds)."""
    calls, wall = timed_run(script, threads)
    return next((c for c in calls if c["what"] == "_precompile_header"), {}), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="hifigan_weight_norm", choices=sorted(MODELS))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threads", default="default", help="'default' or TORCHINDUCTOR_COMPILE_THREADS")
    args = ap.parse_args()
    _, param, plain = MODELS[args.model]
    rows = ["| round | position | variant | header built | wall | compiler CPU | header file | run |",
            "|---|---|---|---|---|---|---|---|"]
    by_variant: dict[str, list[float]] = {"parametrized": [], "plain": []}
    by_position: dict[int, list[float]] = {1: [], 2: []}
    headers: dict[str, set[str]] = {"parametrized": set(), "plain": set()}
    pair_diffs: list[float] = []
    for r in range(1, args.rounds + 1):
        order = [("parametrized", param), ("plain", plain)]
        if r % 2 == 0:
            order.reverse()
        got: dict[str, float] = {}
        for pos, (variant, script) in enumerate(order, 1):
            h, wall = run_once(script, args.threads)
            secs = float(h.get("wall_s", 0.0) or 0.0)
            got[variant] = secs
            by_variant[variant].append(secs)
            by_position[pos].append(secs)
            headers[variant].add(str(h.get("header")))
            rows.append(f"| {r} | {pos} | {variant} | {h.get('start_s', 0):.2f} s in | {secs:.2f} s "
                        f"| {float(h.get('compiler_cpu_s', 0) or 0):.2f} s | {h.get('header')} | {wall:.2f} s |")
            print(rows[-1], flush=True)
        pair_diffs.append(got["parametrized"] - got["plain"])
    print("\n".join(rows))
    mean = statistics.mean
    print(f"\n- model {args.model}, threads {args.threads}, {args.rounds} rounds in balanced order")
    print(f"- header build, mean: parametrized {mean(by_variant['parametrized']):.2f} s, "
          f"plain {mean(by_variant['plain']):.2f} s; first in the pair {mean(by_position[1]):.2f} s, "
          f"second {mean(by_position[2]):.2f} s")
    print("- parametrized - plain, each round: " + ", ".join(f"{d:+.2f} s" for d in pair_diffs))
    same = headers["parametrized"] == headers["plain"] and len(headers["plain"]) == 1
    names = sorted(headers["parametrized"] | headers["plain"])
    print(f"- the same header in every run: {'yes' if same else 'no'} ({', '.join(names)})")


if __name__ == "__main__":
    main()
