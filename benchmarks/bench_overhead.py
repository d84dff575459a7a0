"""Overhead of dynaprof on the seed case, every mode measured side by side in one run.

Each round runs, in a shuffled order, plain ``python samples/parametrized_linear.py`` and the same
script under each dynaprof mode, once for the parametrized model and once for the plain one, each
in a fresh process (so both compiles are the first in their process, lazy imports included). The
script prints the wall time of each first call (the compile), so every mode is timed by the same
code; ``--repeat N`` adds N-1 warm compiles, each after a ``torch._dynamo.reset()``. The script
also prints the garbage collector's time in each compile: a full collection lands in whichever
compile crosses its threshold, so a profiler's own allocations move it from one compile to
another; a second table leaves it out, and gives the collector's time per compile. Process wall time is
measured around the whole command: for dynaprof it includes writing every output, which exist
when the command returns. Prints Markdown tables of medians and ratios to plain python, and of
each round's ratio to plain python in the same round (median and range), with plain python run
again as a separate mode: that null control's spread is the noise the method cannot resolve.

    .venv/bin/python benchmarks/bench_overhead.py --rounds 5
    .venv/bin/python benchmarks/bench_overhead.py --rounds 3 --modes "plain,default,legacy"

``--per-hook`` measures each torch hook alone instead, with ``benchmarks/overhead_cases.py
--configs``: per case one warmed process forks a child per configuration and round (shuffled),
which profiles in-process (``dynaprof.profile()``, sampler off, ``DYNAPROF_HOOKS`` naming the one
hook besides the compile windows every hook records into) and compiles twice; against the same
with the windows only ("hooks off"), every hook, every hook with the sampler, and plain python.
Cases: the seed (eager, parametrized), the seed on Inductor (warm caches, as a second run finds
them; one compile thread), the graph-break and recompile sample, and the steady state (10,000
calls of a small compiled function). Prints a Markdown table of CPU-time ratios to
hooks off and what each hook buys.

    .venv/bin/python benchmarks/bench_overhead.py --per-hook --rounds 3 [--cases seed-eager,breaks]

Time on a shared 2-core VM does not resolve 2%; ``benchmarks/bench_instructions.py`` counts each
compile's instructions under callgrind instead (the same modes, ``--per-hook`` too), and
``bench_stack_base.py`` the frame-stack ``munmap`` calls that instructions do not see.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # dynaprof itself is imported only where a figure needs it (lazily)
SEED = ROOT / "samples" / "parametrized_linear.py"
LINE = re.compile(r"parametrize=(True|False): (\d+) ms(?: \(cpu (\d+) ms(?:, gc (\d+) ms)?\))?")

#: mode -> (dynaprof run options or None for plain python, extra environment)
MODES: dict[str, tuple[list[str] | None, dict[str, str]]] = {
    "plain python": (None, {}),
    #: a null control: plain python again, as a separate mode; its ratio is the method's noise
    "plain python again (null control)": (None, {}),
    "dynaprof, sampling off": (["--sampler", "none"], {}),
    "dynaprof, default (builtin, adapted rate)": ([], {}),
    "dynaprof, builtin 1 kHz fixed": (["--rate", "1000"], {}),
    "dynaprof, builtin 1 kHz, first version's walker": (["--rate", "1000"], {"DYNAPROF_LEGACY_WALKER": "1"}),
    "dynaprof, builtin 250 Hz": (["--rate", "250"], {}),
    "dynaprof, py-spy 100 Hz": (["--sampler", "py-spy"], {}),
    "dynaprof --cprofile": (["--cprofile", "--sampler", "none"], {}),
    "TORCH_COMPILE_CPROFILE=1 (torch's own)": (None, {"TORCH_COMPILE_CPROFILE": "1"}),
}
CASES = {"parametrized": "--parametrize", "plain": "--no-parametrize"}


class Timed(NamedTuple):
    """One process: each compile's wall, CPU of the compiling thread and garbage-collector time,
    and the process's wall and CPU (of the whole process tree: dynaprof, the script, Graphviz)."""

    walls: list[float]
    cpus: list[float]
    gcs: list[float]
    process_wall: float
    process_cpu: float
    #: what the builtin sampler measured it cost the compiles, as a share of their time
    #: (``Samples.cost_s``); None: not sampled by it, or no floor known
    sampler_share: float | None = None


def sampler_share(run_dir: Path) -> float | None:
    """The sampler's own measure of its cost in a run, over the run's compile time."""
    from dynaprof.model import load_session

    s = load_session(run_dir)
    cost = s.samples.cost_s if s.samples is not None else None
    return cost / s.total_compile_s if cost is not None and s.total_compile_s > 0 else None


def run_once(mode: str, case: str, repeat: int, tmp: Path, backend: str = "eager") -> Timed:
    opts, extra = MODES[mode]
    env = dict(os.environ, **extra)
    script = [str(SEED), CASES[case], "--repeat", str(repeat), "--backend", backend, "--device", "cpu"]
    if opts is None:
        cmd = [sys.executable, *script]
    else:
        cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(tmp / "run"), *opts, *script]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} / {case} failed:\n{proc.stderr[-2000:]}")
    if opts is not None and not (tmp / "run" / "report.html").exists():
        raise SystemExit(f"{mode} / {case}: outputs missing when dynaprof returned")
    found = list(LINE.finditer(proc.stdout))
    ms = [[int(m.group(g) or 0) / 1000 for m in found] for g in (2, 3, 4)]
    return Timed(ms[0], ms[1], ms[2], wall, cpu, sampler_share(tmp / "run") if opts is not None else None)


CASES_SCRIPT = ROOT / "benchmarks" / "overhead_cases.py"
COMPILE_LINE = re.compile(r"compile (\d+): ([\d.]+) ms \(cpu ([\d.]+) ms\)")
PER_HOOK_CASES = ("seed-eager", "seed-inductor", "breaks", "loop")


#: what each hook buys: the facts a session lacks without it (the hook modules' docstrings say how)
BUYS = {
    "phases": "phase spans, restarts' attempts, lazy backward compiles",
    "metrics": "torch's CompilationMetrics per compile (restart reasons, cache states)",
    "reset": "compile keys across torch._dynamo.reset()",
    "properties": "exact time and count per traced @property (the parametrization's share)",
    "traced_stack": "the traced user stack of each sample; attempts on torch 2.4",
    "provenance": "AOT autograd's and Inductor's work per FX node and kernel, charged to its cause",
    "guard_causes": "guard building charged to the parametrization that caused it",
    "inlines": "inlined calls per compile and attempt",
    "graph_breaks": "where each graph break happened (file, line, reason)",
    "recompile_reasons": "every cache entry's failing guards, not only the first",
    "ddp_buckets": "DDP's per-bucket subgraph compiles",
    "calls": "calls per compiled entry",
    "markers": "the compile entry the stack walker stops at (samples need it)",
    "cache_keys": "cache lookups with their keys' components (why a cache missed)",
    "work_counts": "Inductor's IR nodes and kernels per graph",
    "aot_graphs": "ops per graph after AOT autograd",
    "instruction_counter": "instructions retired per compile (machines with a CPU counter only)",
}


def hook_table() -> list[tuple[str, str]]:
    """(hook name, what it buys), in ``torch_hooks.STEPS``'s order."""
    from dynaprof.capture.torch_hooks import STEPS

    return [(name, BUYS.get(name, "?")) for name, _ in STEPS if name != "compile_windows"]


def compare_configs(case: str, configs: list[str], rounds: int) -> dict[int, dict[str, float]]:
    """round -> config -> compile CPU seconds (``overhead_cases.py --configs``; round 0: first compiles)."""
    cmd = [sys.executable, str(CASES_SCRIPT), case, "--configs", ",".join(configs), "--rounds", str(rounds)]
    env = {k: v for k, v in os.environ.items() if k != "DYNAPROF_HOOKS"}
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # no worker pool in a process that forks
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{case} failed:\n{proc.stderr[-2000:]}")
    got: dict[int, dict[str, float]] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            got.setdefault(row["round"], {})[row["config"]] = row["cpu"]
    return got


def per_hook(rounds: int, cases: list[str]) -> None:
    hooks = hook_table()
    configs = ["plain", "off", "all", "default", *(h for h, _ in hooks)]
    med = statistics.median
    times: dict[str, dict[int, dict[str, float]]] = {}
    t0 = time.perf_counter()
    for c in cases:
        times[c] = compare_configs(c, configs, rounds)
        print(f"{c} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)

    def ratio(c: str, config: str, base: str, first: bool) -> float:
        rs = [0] if first else [r for r in times[c] if r > 0]
        return med(times[c][r][config] / times[c][r][base] for r in rs)

    def cells(config: str, base: str = "off") -> str:
        return " | ".join(f"{ratio(c, config, base, False):.3f}x | {ratio(c, config, base, True):.3f}x" for c in cases)

    print(f"Each hook alone: CPU time of the compiling thread (``loop``: of 10,000 calls), one forked child per "
          f"configuration, {rounds} rounds of one compile each (shuffled); warm: median over rounds of the ratio "
          "to hooks off (the compile windows only) in the same round; first: the child's first compile\n")
    head = " | ".join(f"{c}, warm | {c}, first" for c in cases)
    print(f"| hook | {head} | what it buys |")
    print("|---|" + "---|" * (2 * len(cases)) + "---|")
    base = " | ".join(f"{med(times[c][r]['off'] for r in times[c] if r > 0) * 1000:.0f} ms | "
                      f"{times[c][0]['off'] * 1000:.0f} ms" for c in cases)
    print(f"| hooks off (compile windows only) | {base} | the compile windows every other hook records into |")
    for name, buys in hooks:
        print(f"| {name} | {cells(name)} | {buys} |")
    print(f"| hooks off against plain python | {cells('off', 'plain')} | |")
    print(f"| all hooks against plain python | {cells('all', 'plain')} | every hook (the default set) |")
    print(f"| default (all hooks, builtin sampler) against plain python | {cells('default', 'plain')} | |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-hook", action="store_true", help="each torch hook alone (overhead_cases.py)")
    ap.add_argument("--cases", default=",".join(PER_HOOK_CASES), help="with --per-hook: comma-separated cases")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=4, help="compiles per process (the 2nd and later are warm)")
    ap.add_argument("--backend", default="eager", help="the seed's torch.compile backend (eager, inductor)")
    ap.add_argument("--modes", default="", help="comma-separated subset of mode names (substring match)")
    ap.add_argument("--json", default="", help="also write every process's figures here, by table|mode|case")
    args = ap.parse_args()
    if args.per_hook:
        per_hook(args.rounds, [c.strip() for c in args.cases.split(",") if c.strip()])
        return
    modes = [m for m in MODES if not args.modes or any(s.strip() in m for s in args.modes.split(","))]
    if "plain python" not in modes:
        modes.insert(0, "plain python")
    keys = [(m, c) for m in modes for c in CASES]
    #: table -> (mode, case) -> one figure per process (warm ones: the mean of its warm compiles, so a
    #: full garbage collection, which lands in one compile or another, counts once per process)
    names = ("first", "first_cpu", "first_nogc", "warm", "warm_nogc", "gc", "walls", "cpus", "sampler")
    got: dict[str, dict[tuple[str, str], list[float]]] = {n: {k: [] for k in keys} for n in names}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for r in range(args.rounds):
            order = keys[:]
            random.shuffle(order)
            for mode, case in order:
                t = run_once(mode, case, args.repeat, tmp, args.backend)
                k = (mode, case)
                got["first"][k].append(t.walls[0])
                got["first_cpu"][k].append(t.cpus[0])
                got["first_nogc"][k].append(t.cpus[0] - t.gcs[0])
                if len(t.walls) > 1:
                    got["warm"][k].append(statistics.mean(t.cpus[1:]))
                    nogc = [c - g for c, g in zip(t.cpus, t.gcs, strict=True)]
                    got["warm_nogc"][k].append(statistics.mean(nogc[1:]))
                got["gc"][k].append(statistics.mean(t.gcs))
                got["walls"][k].append(t.process_wall)
                got["cpus"][k].append(t.process_cpu)
                if t.sampler_share is not None:
                    got["sampler"][k].append(t.sampler_share)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    first, first_cpu, warm, walls, cpus = (got[n] for n in ("first", "first_cpu", "warm", "walls", "cpus"))
    med = statistics.median
    base = "plain python"

    def cell(table: dict[tuple[str, str], list[float]], mode: str, case: str) -> str:
        if not table[mode, case] or not table[base, case] or med(table[base, case]) <= 0:
            return "n/a | n/a"
        v, b = med(table[mode, case]), med(table[base, case])
        return f"{v:.3f} s | {v / b:.2f}x"

    def paired(table: dict[tuple[str, str], list[float]], mode: str, case: str) -> str:
        rs = [v / b for v, b in zip(table[mode, case], table[base, case], strict=True) if b > 0]
        return f"{med(rs):.2f}x [{min(rs):.2f}-{max(rs):.2f}]" if rs else "n/a"

    print(f"seed case, {args.backend} backend, CPU; {args.rounds} rounds; every process fresh; medians; "
          f"ratio to {base}\n")
    print("Compile time (the first call of the compiled model; wall, and CPU time of the compiling thread; "
          "warm: its CPU time, the mean of a process's warm compiles):\n")
    print("| mode | first, parametrized | ratio | first, plain | ratio | CPU, parametrized | ratio | CPU, plain "
          "| ratio | warm, parametrized | ratio | warm, plain | ratio |")
    print("|---|" + "---|" * 12)
    for mode in modes:
        cells = [cell(first, mode, "parametrized"), cell(first, mode, "plain"), cell(first_cpu, mode, "parametrized"),
                 cell(first_cpu, mode, "plain"), cell(warm, mode, "parametrized"), cell(warm, mode, "plain")]
        print(f"| {mode} | " + " | ".join(cells) + " |")
    print("\nThe same, less the garbage collector's time in each compile (a full collection, ~0.15 s on the "
          "seed, lands in whichever compile crosses its threshold: anything else that allocates moves it), "
          "and the collector's time per compile (mean over every compile of a process):\n")
    print("| mode | CPU less GC, first, parametrized | ratio | CPU less GC, first, plain | ratio | CPU less GC, warm, "
          "parametrized | ratio | CPU less GC, warm, plain | ratio | GC per compile, parametrized | ratio "
          "| GC per compile, plain | ratio |")
    print("|---|" + "---|" * 12)
    for mode in modes:
        cells = [cell(got[n], mode, c) for n in ("first_nogc", "warm_nogc", "gc") for c in CASES]
        print(f"| {mode} | " + " | ".join(cells) + " |")
    print("\nPaired: each round's ratio to plain python in the same round (the CPU time less the collector's), "
          "median [lowest-highest] over rounds; the null control's spread is what the method cannot resolve:\n")
    print("| mode | first, parametrized | first, plain | warm, parametrized | warm, plain |")
    print("|---|---|---|---|---|")
    for mode in modes[1:]:
        cells = [paired(got[n], mode, c) for n in ("first_nogc", "warm_nogc") for c in CASES]
        print(f"| {mode} | " + " | ".join(cells) + " |")
    sampled = [m for m in modes if any(got["sampler"][m, c] for c in CASES)]
    if sampled:
        print("\nWhat the builtin sampler measured it cost (its signals at the boot's measured floor, and its "
              "samples' own timed seconds), as a share of the run's compile time, median [lowest-highest]:\n")
        print("| mode | parametrized | plain |")
        print("|---|---|---|")
        for mode in sampled:
            shares = [got["sampler"][mode, c] for c in CASES]
            print(f"| {mode} | " + " | ".join(f"{100 * med(v):.1f}% [{100 * min(v):.1f}-{100 * max(v):.1f}]"
                                               if v else "n/a" for v in shares) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps({f"{n}|{m}|{c}": v for n, t in got.items() for (m, c), v in t.items()}))
    print("\nWhole process, every output written (wall, and CPU of the whole process tree):\n")
    print("| mode | wall, parametrized | ratio | wall, plain | ratio | CPU, parametrized | ratio | CPU, plain "
          "| ratio |")
    print("|---|" + "---|" * 8)
    for mode in modes:
        cells = [cell(walls, mode, "parametrized"), cell(walls, mode, "plain"), cell(cpus, mode, "parametrized"),
                 cell(cpus, mode, "plain")]
        print(f"| {mode} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
