"""Does kernel compile time go to its cause on Inductor? causes.parametrization against the compile
time a parametrization adds, on models people use, on a cold machine state.

For each model, the parametrized and the plain variant run under ``dynaprof run`` in separate
processes, in shuffled order, each with a fresh ``TORCHINDUCTOR_CACHE_DIR`` and ``TMPDIR`` (so each
pays any toolchain setup it triggers: the vector-ISA probe, the precompiled header), Inductor
backend, with the default compile threads and with ``TORCHINDUCTOR_COMPILE_THREADS=1``. The ratio
``causes.parametrization / (parametrized - plain)`` should be in [0.75, 1.25] (median of the
rounds). With ``--counterfactual`` the parametrized run is ``dynaprof run --counterfactual``: a second
run with every parametrization folded tells which fused kernels exist only because of it (they go
to the parametrization whole); the last column gives them and that run's compile time. The folded
run does the plain variant's compile work in a process of its own, so ``folded - plain`` is a null
pair: what two runs of the same work differ by in that sitting, the noise any difference carries
(printed under each model's median). On a model
without parametrization (a transformers ResNet), ``whole graph`` should stay under 15%
of compile. Every run is a row, the bad ones too; a model whose package is missing says so.

    .venv/bin/python benchmarks/bench_kernel_causes.py                         # everything, 3 rounds
    .venv/bin/python benchmarks/bench_kernel_causes.py --models seed --rounds 1 --threads default,1
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.analysis.findings import hottest  # noqa: E402
from dynaprof.model import load_session  # noqa: E402
from dynaprof.model import session as sm  # noqa: E402
from dynaprof.model.session import Session  # noqa: E402

B = ROOT / "benchmarks"
#: model -> (package it needs or None, parametrized command, plain command)
MODELS: dict[str, tuple[str | None, list[str], list[str]]] = {
    "seed": (None, [str(ROOT / "samples/parametrized_linear.py"), "--parametrize", "--backend", "inductor",
                    "--device", "cpu"],
             [str(ROOT / "samples/parametrized_linear.py"), "--no-parametrize", "--backend", "inductor",
              "--device", "cpu"]),
    "hifigan_weight_norm": ("transformers", [str(B / "readability/hifigan.py"), "inductor"],
                            [str(B / "readability/hifigan.py"), "inductor", "--plain"]),
    # the fold is the fair plain side: EnCodec's --plain swaps weight norm for time group norm
    "encodec": ("transformers", [str(B / "readability/encodec.py"), "inductor"],
                [str(B / "readability/encodec.py"), "inductor", "--fold"]),
    "dac": ("transformers", [str(B / "causes/dac.py"), "--backend", "inductor"],
            [str(B / "causes/dac.py"), "--backend", "inductor", "--plain"]),
    "spectral_norm": (None, [str(B / "causes/torch_parametrizations.py"), "--kind", "spectral_norm", "--backend",
                             "inductor"],
                      [str(B / "causes/torch_parametrizations.py"), "--kind", "spectral_norm", "--backend",
                       "inductor", "--fold"]),
    "orthogonal": (None, [str(B / "causes/torch_parametrizations.py"), "--kind", "orthogonal", "--backend",
                          "inductor"],
                   [str(B / "causes/torch_parametrizations.py"), "--kind", "orthogonal", "--backend", "inductor",
                    "--fold"]),
    "torchao_unwrap": ("torchao", [str(B / "causes/torchao_unwrap.py"), "--unwrap", "--backend", "inductor"],
                       [str(B / "causes/torchao_unwrap.py"), "--no-unwrap", "--backend", "inductor"]),
    # 64 layers, so what unwrap adds stands out of a cold compile's noise (with 8 it is 0.1-0.4 s)
    "torchao_unwrap_64": ("torchao", [str(B / "causes/torchao_unwrap.py"), "--unwrap", "--backend", "inductor",
                                      "--layers", "64"],
                          [str(B / "causes/torchao_unwrap.py"), "--no-unwrap", "--backend", "inductor",
                           "--layers", "64"]),
}
#: models without parametrization: whole graph's share of compile
PLAIN_MODELS: dict[str, tuple[str, list[str]]] = {
    "resnet18_like": ("transformers", [str(B / "causes/resnet_model.py")]),
}


def cold_env(folder: Path, threads: str = "default") -> dict[str, str]:
    """The environment of one cold run: an Inductor cache and a temporary folder (where the
    precompiled header goes) of its own under ``folder``; ``threads``: 'default' or a count."""
    (folder / "tmp").mkdir(parents=True)
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(folder / "cache"), "TMPDIR": str(folder / "tmp")}
    if threads != "default":
        env["TORCHINDUCTOR_COMPILE_THREADS"] = threads
    return env


def profile(script: list[str], out: Path, threads: str, *opts: str) -> Session:
    """One cold run: its own Inductor cache and temporary folder."""
    env = cold_env(out.parent / (out.name + "-state"), threads)
    cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(out), *opts, *script]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(script)} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return load_session(out)


def _ratio(x: float) -> str:
    return "n/a (plain slower)" if math.isnan(x) else f"{x:.2f}"


def _median(xs: list[float]) -> str:
    """The median of the rounds that could be measured (the plain run was not the slower one)."""
    ok = [x for x in xs if not math.isnan(x)]
    return f"{statistics.median(ok):.2f} ({len(ok)} of {len(xs)})" if ok else "n/a"


def toolchain(s: Session, cause: str | None = None) -> float:
    """Sampled seconds of toolchain setup in a run (for one cause, or all)."""
    row = s.axes.matrix.get("toolchain_setup", {}) if s.axes else {}
    return sum(row.values()) if cause is None else row.get(cause, 0.0)


def _available(package: str | None) -> bool:
    return package is None or importlib.util.find_spec(package) is not None


def _counterfactual(s: Session) -> str:
    cf = s.counterfactual
    if cf is None:
        return "none"
    return (f"{cf.extra_kernels} of {cf.kernels_here} kernels ({cf.extra_kernel_s:.2f} s); folded run "
            f"{cf.compile_s:.2f} s, {cf.kernels} kernels")


def _replay(s: Session) -> str:
    """What the Inductor replay found and cost: its seconds beside the run's wall time."""
    r = s.replay
    if r is None:
        return "none"
    wall = s.run.wall_s or 0.0
    cost = f", {(wall + r.seconds) / wall:.2f}x the run's wall" if wall > 0 else ""
    return (f"{r.extra_kernels} extra ({r.extra_kernel_s:.2f} s), {r.spared_kernels} spared "
            f"({r.spared_kernel_s:.2f} s); {r.seconds:.1f} s{cost}" + (f"; {len(r.failed)} failed" if r.failed else ""))


def phase_rows(label: str, p: Session, q: Session) -> list[str]:
    """Where a pair's difference is, phase by phase: parametrized, plain, their difference and the
    parametrization's seconds in that phase (``--phases``)."""
    mp, mq = (p.axes.matrix if p.axes else {}), (q.axes.matrix if q.axes else {})
    out = []
    for phase in sorted(set(mp) | set(mq)):
        a, b = sum(mp.get(phase, {}).values()), sum(mq.get(phase, {}).values())
        par = mp.get(phase, {}).get("parametrization", 0.0)
        if max(a, b) >= 0.05:
            out.append(f"| {label} | {phase} | {a:.2f} s | {b:.2f} s | {a - b:+.2f} s | {par:.2f} s |")
    return out


def cause_rows(label: str, p: Session, q: Session) -> list[str]:
    """Where a pair's difference is, by kind of cause: the parametrization, each unnamed cause, and
    the user's code (every other cause) in the parametrized and the plain run (``--phases``)."""
    def kinds(s: Session) -> dict[str, float]:
        causes = s.axes.causes if s.axes else {}
        out = {k: causes.get(k, 0.0) for k in (sm.CAUSE_PARAMETRIZATION, *sm.UNNAMED_CAUSES)}
        out["user code"] = sum(v for k, v in causes.items() if k not in out)
        return out

    a, b = kinds(p), kinds(q)
    return [f"| {label} | {k} | {a[k]:.2f} s | {b[k]:.2f} s | {a[k] - b[k]:+.2f} s |" for k in a
            if max(a[k], b[k]) >= 0.05]


def accuracy(models: list[str], threads: list[str], rounds: int, tmp: Path, counterfactual: bool = False,
             phases: list[str] | None = None, causes: list[str] | None = None) -> list[str]:
    rows = ["| model | threads | round | parametrized | plain | difference | causes.parametrization | ratio "
            "| toolchain setup (param / plain) | ratio, toolchain excluded | collector (param / plain) "
            "| unmeasured waits | replay: kernels only with it, spared; its time |"
            + (" counterfactual: kernels only with it |" if counterfactual else ""),
            "|---|" + "---|" * (13 if counterfactual else 12)]
    opts = ("--counterfactual",) if counterfactual else ()
    verdicts: dict[str, str] = {}
    n = 0
    for model in models:
        package, param_cmd, plain_cmd = MODELS[model]
        if not _available(package):
            rows.append(f"| {model} | | | {package} is not installed | | | | | | | | |")
            continue
        for th in threads:
            ratios, excluded = [], []
            pooled = [0.0, 0.0]  # sums over the rounds, toolchain out: cause, difference
            nulls: list[float] = []  # folded run - plain run: the same work twice (module docstring)
            for r in range(rounds):
                order = [True, False]
                random.shuffle(order)
                got: dict[bool, Session] = {}
                try:
                    for param in order:
                        n += 1
                        got[param] = profile(param_cmd if param else plain_cmd, tmp / f"run{n}", th,
                                             *(opts if param else ()))
                except RuntimeError as e:
                    rows.append(f"| {model} | {th} | {r + 1} | failed: {str(e)[:100]} | | | | | | | | |")
                    continue
                p, q = got[True], got[False]
                diff = p.total_compile_s - q.total_compile_s
                cause = p.axes.causes.get("parametrization", 0.0) if p.axes else 0.0
                ratio = cause / diff if diff > 0 else float("nan")
                ratios.append(ratio)
                tool, tool_q, tool_param = toolchain(p), toolchain(q), toolchain(p, "parametrization")
                # the one-time toolchain setup out of both compile times and out of the cause: the
                # attribution of everything else, without the largest source of noise between processes
                diff_ex = (p.total_compile_s - tool) - (q.total_compile_s - tool_q)
                ratio_ex = (cause - tool_param) / diff_ex if diff_ex > 0 else float("nan")
                excluded.append(ratio_ex)
                pooled[0] += cause - tool_param
                pooled[1] += diff_ex
                unmeasured = sum(f.kernel_wait_unmeasured_s for f in p.frames)
                # the garbage collector's own phase and cause (docs/causes.md): a full collection
                # lands in whichever compile crosses the threshold, so it is shown apart
                gc_p, gc_q = (x.axes.causes.get(sm.CAUSE_COLLECTOR, 0.0) if x.axes else 0.0 for x in (p, q))
                if p.counterfactual is not None:
                    nulls.append(p.counterfactual.compile_s - q.total_compile_s)
                # which ran first: the first of a pair tends to run slower (bench_toolchain_order.py)
                first = "parametrized" if order[0] else "plain"
                rows.append(f"| {model} | {th} | {r + 1} ({first} first) | {p.total_compile_s:.2f} s "
                            f"| {q.total_compile_s:.2f} s "
                            f"| {diff:.2f} s | {cause:.2f} s | {_ratio(ratio)} | {tool:.2f} s / {tool_q:.2f} s "
                            f"| {_ratio(ratio_ex)} | {gc_p:.2f} s / {gc_q:.2f} s | {unmeasured:.2f} s | {_replay(p)} |"
                            + (f" {_counterfactual(p)} |" if counterfactual else ""))
                verdicts[f"{model}, {th} threads"] = hottest(p)
                if phases is not None:
                    phases += phase_rows(f"{model}, {th}, round {r + 1}", p, q)
                if causes is not None:
                    causes += cause_rows(f"{model}, {th}, round {r + 1}", p, q)
                print(rows[-1], file=sys.stderr, flush=True)
            if ratios:
                rows.append(f"| {model} | {th} | median | | | | | **{_median(ratios)}** | "
                            f"| **{_median(excluded)}** | | |")
                # one ratio of the rounds' sums: a round's small difference no longer weighs as much
                # as a large one, which the median of ratios lets a toolchain swing do
                rows.append(f"| {model} | {th} | summed, toolchain out | | | {pooled[1]:.2f} s | {pooled[0]:.2f} s | "
                            f"| | **{_ratio(pooled[0] / pooled[1] if pooled[1] > 0 else math.nan)}** | | |")
            if nulls:
                rows.append(f"| {model} | {th} | null pairs: folded - plain | | | "
                            f"{' / '.join(f'{x:+.2f} s' for x in nulls)} | | | | | | |")
    rows.append("")
    rows += [f"- verdict, {k}: {v}" for k, v in verdicts.items()]
    return rows


def whole_graph(threads: list[str], tmp: Path) -> list[str]:
    rows = ["| model | threads | compile | whole graph | share |", "|---|---|---|---|---|"]
    for model, (package, cmd) in PLAIN_MODELS.items():
        if not _available(package):
            rows.append(f"| {model} | | {package} is not installed | | |")
            continue
        for th in threads:
            s = profile(cmd, tmp / f"{model}-{th}", th)
            whole = s.axes.causes.get(sm.CAUSE_WHOLE_GRAPH, 0.0) if s.axes else 0.0
            rows.append(f"| {model} | {th} | {s.total_compile_s:.2f} s | {whole:.2f} s "
                        f"| {100 * whole / max(s.total_compile_s, 1e-9):.0f}% |")
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", default="default,1", help="compile threads per run: default and/or N")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu", help="the seed sample's device (cpu, cuda)")
    ap.add_argument("--no-plain-models", action="store_true", help="skip the whole-graph check (resnet18)")
    ap.add_argument("--phases", action="store_true", help="also tables of each pair's phases and kinds of cause")
    ap.add_argument("--counterfactual", action="store_true",
                    help="profile the parametrized runs with dynaprof run --counterfactual")
    args = ap.parse_args()
    threads = args.threads.split(",")
    for cmd in MODELS["seed"][1:]:
        cmd[cmd.index("--device") + 1] = args.device
    with tempfile.TemporaryDirectory(prefix="dynaprof-kernel-causes-") as d:
        tmp = Path(d)
        phases: list[str] | None = [] if args.phases else None
        causes: list[str] | None = [] if args.phases else None
        out = accuracy(args.models.split(","), threads, args.rounds, tmp, args.counterfactual, phases, causes)
        if phases:
            out += ["", "| pair | phase | parametrized | plain | difference | parametrization |",
                    "|---|---|---|---|---|---|", *phases]
        if causes:
            out += ["", "| pair | kind of cause | parametrized | plain | difference |", "|---|---|---|---|---|",
                    *causes]
        if not args.no_plain_models:
            out += ["", *whole_graph(threads, tmp)]
    print("\n".join(out))


if __name__ == "__main__":
    main()
