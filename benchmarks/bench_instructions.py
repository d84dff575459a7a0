"""dynaprof's cost in instructions: each compile's instructions counted by Valgrind's callgrind,
plain ``python`` against ``dynaprof run``, on the same script.

Wall and CPU time on a shared 2-core VM spread +-10-30% between fresh processes, more than the
2% a hook may cost, so no number of rounds there settles a 2% target in a session. Instructions
executed do not depend on the machine's load: the same compile counts the same to about 0.1%
from run to run (warm compiles; 1% for a process's first), which PyTorch's own compile-time
gate relies on too (its ``pr_time_benchmarks`` count callgrind instructions). So this benchmark
runs ``benchmarks/overhead_cases.py CASE --callgrind`` with the interpreter under
``valgrind --tool=callgrind --collect-atstart=no``: collection is switched on around each compile
alone (``torch._C._valgrind_toggle``) and dumped after it, so torch's import and the script's
setup do not count. ``dynaprof run`` itself runs natively; only its child, the script, runs under
Valgrind (the benchmark points the launcher's ``sys.executable`` at a wrapper), so what is
counted is the script's thread with dynaprof's hooks in it.

What instructions do not show: the kernel's side of a signal (the sampler's timer; see
``bench_signal_floor.py``) and cache or memory effects (CPython's frame-chunk unmaps count as the
instructions that make them, not their page faults; ``bench_stack_base.py`` counts those). And
the builtin sampler's rate is per second of wall time, which runs ~50x slower under Valgrind, so
its row counts ~50x the samples a native run takes: it is given per sample instead.

    .venv/bin/python benchmarks/bench_instructions.py --cases seed-eager,seed-eager-plain,loop --rounds 3
    .venv/bin/python benchmarks/bench_instructions.py --cases seed-inductor-plain,seed-inductor --jobs 2
    .venv/bin/python benchmarks/bench_instructions.py --cases seed-eager-plain --per-hook --keep /tmp/cg

The same compile counts the same to ~0.1% within a process but 0.3-2% apart between processes
(the interpreter's type-attribute cache and dict probes depend on the order objects were made),
so ``--rounds`` runs that many processes per mode and the table gives medians. ``--per-hook``
adds each hook alone over the compile windows; ``--keep`` keeps the dumps, for
``callgrind_annotate --inclusive=yes`` (which C functions a mode added: how the costs in
``docs/performance.md``, "Counted in instructions", were found).

Every run takes minutes (Valgrind slows Python ~50x); ``--jobs`` runs that many at once, which
changes no count. Prints a Markdown table: instructions per compile, ratio to plain python.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES_SCRIPT = ROOT / "benchmarks" / "overhead_cases.py"
TOTALS = re.compile(r"^totals: (\d+)", re.M)
SAMPLES = re.compile(r"([\d,]+) samples")

#: mode -> (dynaprof run options, or None for plain python; extra environment)
MODES: dict[str, tuple[list[str] | None, dict[str, str]]] = {
    "plain python": (None, {}),
    "dynaprof run, compile windows only": (["--sampler", "none"], {"DYNAPROF_HOOKS": ""}),
    "dynaprof run, every hook (sampling off)": (["--sampler", "none"], {}),
    #: a fixed rate: the adapted one would measure the machine's signal floor under Valgrind
    "dynaprof run, every hook, builtin sampler at 1 kHz": (["--rate", "1000"], {}),
}
DEFAULT_MODES = list(MODES)[:3]
WINDOWS = "dynaprof run, compile windows only"
EVERY_HOOK = "dynaprof run, every hook (sampling off)"


def hook_modes() -> list[str]:
    """One mode per hook (``--per-hook``): the compile windows and that hook alone."""
    sys.path.insert(0, str(ROOT))
    from dynaprof.capture.torch_hooks import STEPS

    names = []
    for name, _ in STEPS:
        if name != "compile_windows":
            names.append(f"compile windows + {name}")
            MODES[names[-1]] = (["--sampler", "none"], {"DYNAPROF_HOOKS": name})
    return names

#: run dynaprof's CLI with the launcher's interpreter replaced by the Valgrind wrapper (argv[1])
BOOT = "import sys; sys.executable = sys.argv.pop(1); from dynaprof.cli import main; sys.exit(main(sys.argv[1:]))"


def wrapper(folder: Path) -> Path:
    """A script that runs the real interpreter under callgrind, dumps into ``folder``."""
    w = folder / "python-callgrind"
    w.write_text(
        "#!/bin/sh\n"
        f"exec valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file={folder}/cg.%p "
        f'"{sys.executable}" "$@"\n'
    )
    w.chmod(0o755)
    return w


def dumps(folder: Path) -> list[int]:
    """Instructions of each dump, in order (``cg.PID.1``, ``cg.PID.2``, ...: one per compile)."""
    files = [p for p in folder.glob("cg.*.*") if p.suffix[1:].isdigit()]
    files.sort(key=lambda p: int(p.suffix[1:]))
    return [int(m.group(1)) for p in files if (m := TOTALS.search(p.read_text(errors="replace")))]


def run_one(mode: str, case: str, repeat: int, work: Path, env_base: dict[str, str],
            keep: Path | None = None) -> tuple[list[int], str]:
    """(instructions per compile, dynaprof's summary or ''), one process under callgrind."""
    opts, extra = MODES[mode]
    folder = Path(tempfile.mkdtemp(prefix="cg-", dir=keep or work))
    w = wrapper(folder)
    script = [str(CASES_SCRIPT), case, "--repeat", str(repeat), "--callgrind"]
    env = dict(env_base, **extra)
    if opts is None:
        cmd = [str(w), *script]
    else:
        cmd = [sys.executable, "-c", BOOT, str(w), "run", "--force", "-o", str(folder / "run"), "--exports", "none",
               *opts, *script]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=folder)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} / {case} failed:\n{proc.stderr[-3000:]}")
    got = dumps(folder)
    if len(got) != repeat:
        raise SystemExit(f"{mode} / {case}: {len(got)} dumps for {repeat} compiles in {folder}")
    summary = proc.stderr if opts is not None else ""
    if keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        (folder / "MODE").write_text(f"{case} / {mode}\n")
    return got, summary


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="seed-eager,seed-eager-plain,loop",
                    help="overhead_cases.py cases, comma-separated")
    ap.add_argument("--modes", default="", help="comma-separated substrings of mode names (default: the first three)")
    ap.add_argument("--repeat", type=int, default=2, help="compiles per process: the first, then warm ones")
    ap.add_argument("--rounds", type=int, default=1, help="processes per mode and case (counts repeat to ~0.1%%)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--per-hook", action="store_true",
                    help="also each hook alone over the compile windows (issue 36's per-hook table)")
    ap.add_argument("--hooks", default="", help="with --per-hook: only these hooks (comma-separated)")
    ap.add_argument("--keep", type=Path, help="keep each process's dumps under this folder (callgrind_annotate)")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_instructions: valgrind not found (apt-get install -y valgrind)")
    modes = DEFAULT_MODES if not args.modes else [
        m for m in MODES if any(s.strip() and s.strip() in m for s in args.modes.split(","))]
    if args.per_hook:
        only = {h.strip() for h in args.hooks.split(",") if h.strip()}
        per = [m for m in hook_modes() if not only or m.removeprefix("compile windows + ") in only]
        modes += [m for m in [WINDOWS, EVERY_HOOK, *per] if m not in modes]
    if "plain python" not in modes:
        modes.insert(0, "plain python")
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-instr-") as d:
        work = Path(d)
        env = dict(os.environ, PYTHONHASHSEED="0", TORCHINDUCTOR_COMPILE_THREADS="1",
                   TORCHINDUCTOR_CACHE_DIR=str(work / "inductor-cache"))
        env.pop("DYNAPROF_HOOKS", None)
        if any("inductor" in c for c in cases):
            # warm the compiler caches natively, so every mode finds them as a second run does
            for c in cases:
                subprocess.run([sys.executable, str(CASES_SCRIPT), c, "--repeat", "1"], env=env, check=True,
                               capture_output=True)
        jobs = [(m, c) for _ in range(args.rounds) for c in cases for m in modes]
        t0 = time.perf_counter()
        results: dict[tuple[str, str], list[list[int]]] = {}
        summaries: dict[tuple[str, str], str] = {}
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(run_one, m, c, args.repeat, work, env, args.keep): (m, c) for m, c in jobs}
            for f in futures:
                key = futures[f]
                got, summary = f.result()
                results.setdefault(key, []).append(got)
                summaries[key] = summary
                print(f"{key[1]} / {key[0]}: {got} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    med = statistics.median

    def count(mode: str, case: str, i: int) -> float:
        return med(r[i] for r in results[mode, case])

    print(f"Instructions per compile (callgrind, the compiling process only; {args.rounds} process(es) per "
          f"mode and case, median; PYTHONHASHSEED=0); ratio to plain python\n")
    cols = [(c, i) for c in cases for i in range(args.repeat)]
    names = {0: "first", 1: "warm"}
    print("| mode | " + " | ".join(f"{c}, {names.get(i, f'compile {i + 1}')}" for c, i in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for mode in modes:
        cells = []
        for c, i in cols:
            v, b = count(mode, c, i), count("plain python", c, i)
            cells.append(f"{v / 1e6:,.1f} M" if mode == "plain python" else f"{v / b:.4f}x")
        print(f"| {mode} | " + " | ".join(cells) + " |")
    if WINDOWS in modes and any(m.startswith("compile windows +") for m in modes):
        print("\nEach hook alone: instructions over the compile windows only (every hook records into them)\n")
        print("| mode | " + " | ".join(f"{c}, {names.get(i, f'compile {i + 1}')}" for c, i in cols) + " |")
        print("|---|" + "---|" * len(cols))
        for mode in modes:
            if mode.startswith("compile windows +") or mode == EVERY_HOOK:
                cells = [f"{(count(mode, c, i) - count(WINDOWS, c, i)) / count(WINDOWS, c, i):+.2%}" for c, i in cols]
                print(f"| {mode} | " + " | ".join(cells) + " |")
    sampled = [k for k in summaries if "builtin sampler" in k[0]]
    for mode, case in sampled:
        m = SAMPLES.search(summaries[mode, case])
        if m:
            n = int(m.group(1).replace(",", ""))
            extra = sum(count(mode, case, i) - count(EVERY_HOOK, case, i)
                        for i in range(args.repeat)) if EVERY_HOOK in modes else 0
            print(f"\n{case}: the sampler took {n:,} samples under Valgrind; "
                  f"{extra / max(n, 1):,.0f} instructions a sample over every hook")


if __name__ == "__main__":
    main()
