"""``dynaprof sweep`` on compile work of known shape, and on the seed: are the exponents right?

Each case is one real ``dynaprof sweep`` (every point and repeat a fresh ``dynaprof run`` with cold
compiler caches), timed from start to end, then its growth fitted (``analysis.growth``) and
printed as a Markdown table: each measure's exponent k with its 95% interval and residual, and
its share of compile at the smallest and the largest point. The cases:

* ``constant`` / ``linear`` / ``quadratic``: ``samples/compile_growth.py`` (a fixed function
  called N times; N sequential ops; a prefix of k ops recompiled for k = 1..N), eager: the counts'
  exponents should be about 0, 1 and 2, and the timings near them where the fixed cost of a
  compile does not dominate;
* ``seed-eager``: ``samples/parametrized_linear.py --layers {LAYERS}``, 4 points x 3 repeats (the
  issue asks this one to take under 2 minutes here);
* ``seed-inductor``: the same with ``--backend inductor`` (10-80 s a compile here: 1 repeat);
* ``seed-eager-2.4``: the eager seed under ``--torch24-python`` (a venv with torch 2.4.x).

    .venv/bin/python benchmarks/bench_sweep.py --cases constant linear quadratic seed-eager
    .venv/bin/python benchmarks/bench_sweep.py --cases seed-eager-2.4 --torch24-python .venv-torch-2.4.1/bin/python

docs/growth.md keeps the tables.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.analysis.growth import growth, verdict  # noqa: E402
from dynaprof.model.sweep import load_sweep  # noqa: E402
from dynaprof.render.sweep_report import growth_tables_md  # noqa: E402

GROWTH = str(ROOT / "samples" / "compile_growth.py")
SEED = str(ROOT / "samples" / "parametrized_linear.py")

#: case -> (--param, --repeat, the script and its arguments, which Python runs it)
CASES: dict[str, tuple[str, int, list[str], str]] = {
    "constant": ("N=4,8,16,32", 3, [GROWTH, "--shape", "constant", "--n", "{N}"], "main"),
    "linear": ("N=8,16,32,64", 3, [GROWTH, "--shape", "linear", "--n", "{N}"], "main"),
    "quadratic": ("N=4,8,16,32", 3, [GROWTH, "--shape", "quadratic", "--n", "{N}"], "main"),
    "seed-eager": ("LAYERS=4,8,16,32", 3, [SEED, "--layers", "{LAYERS}"], "main"),
    "seed-inductor": ("LAYERS=4,8,16,32", 1, [SEED, "--layers", "{LAYERS}", "--backend", "inductor"], "main"),
    "seed-eager-2.4": ("LAYERS=4,8,16,32", 3, [SEED, "--layers", "{LAYERS}"], "torch24"),
}


def run_case(name: str, python: str, out: Path) -> None:
    param, repeat, target, _ = CASES[name]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    r = subprocess.run([python, "-m", "dynaprof", "sweep", "-q", "--param", param, "--repeat", str(repeat),
                        "-o", str(out), *target], env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if r.returncode != 0:
        print(f"### {name}: sweep failed ({r.returncode})\n\n```\n{r.stderr[-2000:]}\n```\n")
        return
    sweep = load_sweep(out)
    g = growth(sweep)
    runs = sum(len(p.runs) for p in sweep.points)
    print(f"### {name} (torch {sweep.torch_version}; {param}, {repeat} repeats; {runs} runs in {took:.0f} s, "
          f"{took / runs:.1f} s a run)\n")
    for line in verdict(g) + [f"flag: {f.text}" for f in g.flags]:
        print(f"- {line}")
    print()
    print("\n".join(line.replace("### ", "#### ") for line in growth_tables_md(g)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=["constant", "linear", "quadratic",
                                                                           "seed-eager"])
    ap.add_argument("--torch24-python", default=str(ROOT / ".venv-torch-2.4.1" / "bin" / "python"),
                    help="a Python with torch 2.4.x and dynaprof's dependencies (the seed-eager-2.4 case)")
    ap.add_argument("--keep", type=Path, help="keep the sweep folders here (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        base = args.keep or Path(tmp)
        for name in args.cases:
            python = args.torch24_python if CASES[name][3] == "torch24" else sys.executable
            if not Path(python).exists():
                print(f"### {name}: skipped, no {python}\n")
                continue
            run_case(name, python, base / name)


if __name__ == "__main__":
    main()
