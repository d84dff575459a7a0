"""Is the cause right on every backend? Accuracy of the cause x phase attribution, and the remedies.

Sections (all by default; pick with ``--sections``):

* ``accuracy``: the seed case, plain and parametrized, each in a fresh process under ``dynaprof
  run``, interleaved, Inductor's caches off (``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1``), for each
  backend. ``causes.parametrization`` should account for the compile-time difference (target
  [0.75, 1.25]); the AOT autograd phase should match torch's own AOT spans (create_aot_dispatcher_
  function less the backend compiler and the joint-graph passes nested in it; target +-25%).
* ``libraries``: models from libraries that apply parametrizations (torch's weight_norm,
  spectral_norm, orthogonal; torchao's unwrap_tensor_subclass; peft's target_parameters): the
  summary must name the parametrization.
* ``restarts``: samples/restart_analysis.py: the restart finding says what was being traced.
* ``remedies``: each remedy dynaprof suggests, applied to a sample: compile time before and after.

    .venv/bin/python benchmarks/bench_causes.py                       # everything (~10 min)
    .venv/bin/python benchmarks/bench_causes.py --sections accuracy --backends aot_eager --rounds 3
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.analysis.findings import findings, hottest  # noqa: E402
from dynaprof.model import load_session  # noqa: E402
from dynaprof.model.session import CAUSE_COLLECTOR, Session  # noqa: E402

SEED = ROOT / "samples" / "parametrized_linear.py"
CAUSES = ROOT / "benchmarks" / "causes"
DIFF = ROOT / "benchmarks" / "differential"
NO_CACHE = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}


def profile(script: list[str], out: Path, env: dict[str, str] | None = None) -> Session:
    cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(out), *script]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(script)} failed:\n{proc.stderr[-3000:]}")
    return load_session(out)


def torch_aot_seconds(s: Session) -> float:
    """torch's own AOT autograd time: its dispatcher span less the backend compilers and the
    Inductor joint-graph passes that run inside it."""
    total = 0.0
    for f in s.frames:
        p = f.phases
        nested = ("compile_fx.<locals>.fw_compiler_base", "compile_fx.<locals>.bw_compiler_base",
                  "_recursive_joint_graph_passes")
        inner = sum(p.get(n, 0.0) for n in nested)
        total += max(0.0, p.get("create_aot_dispatcher_function", 0.0) - inner)
    return total


def accuracy(backends: list[str], rounds: int, tmp: Path) -> list[str]:
    rows = ["| backend | round | compile parametrized | compile plain | difference | causes.parametrization "
            "| ratio | collector (param / plain) | ratio, collector out | AOT phase (dynaprof) | AOT spans (torch) "
            "| AOT ratio |", "|---|" + "---|" * 11]
    verdicts: dict[str, str] = {}
    for backend in backends:
        ratios = []
        for r in range(rounds):
            order = [True, False]
            random.shuffle(order)
            got: dict[bool, Session] = {}
            for param in order:
                flag = "--parametrize" if param else "--no-parametrize"
                got[param] = profile([str(SEED), flag, "--backend", backend, "--device", "cpu"],
                                     tmp / f"{backend}-{param}", NO_CACHE)
            p, q = got[True], got[False]
            diff = p.total_compile_s - q.total_compile_s
            cause = p.axes.causes.get("parametrization", 0.0) if p.axes else 0.0
            ratio = cause / diff if diff > 0 else float("nan")
            ratios.append(ratio)
            # a full collection lands in whichever compile crosses the collector's threshold (the
            # parametrized one, here): its time is the collector's, so the ratio is also given without it
            gc_p, gc_q = (x.axes.causes.get(CAUSE_COLLECTOR, 0.0) if x.axes else 0.0 for x in (p, q))
            rest = diff - (gc_p - gc_q)
            no_gc = f"{cause / rest:.2f}" if rest > 0 else "n/a"
            aot, torch_aot = p.attribution.get("aot_autograd", 0.0), torch_aot_seconds(p)
            aot_ratio = f"{aot / torch_aot:.2f}" if torch_aot > 0.05 else "n/a (under 50 ms)"
            rows.append(f"| {backend} | {r + 1} | {p.total_compile_s:.2f} s | {q.total_compile_s:.2f} s | {diff:.2f} s "
                        f"| {cause:.2f} s | {ratio:.2f} | {gc_p:.2f} s / {gc_q:.2f} s | {no_gc} | {aot:.2f} s "
                        f"| {torch_aot:.2f} s | {aot_ratio} |")
            verdicts[backend] = hottest(p)
            print(rows[-1], file=sys.stderr)
        rows.append(f"| {backend} | median | | | | | **{statistics.median(ratios):.2f}** | | | | | |")
    rows.append("")
    rows += [f"- verdict, {b}: {v}" for b, v in verdicts.items()]
    return rows


LIBRARIES: list[tuple[str, list[str]]] = [
    ("torch weight_norm (Conv1d)", [str(CAUSES / "torch_parametrizations.py"), "--kind", "weight_norm"]),
    ("torch spectral_norm (Linear)", [str(CAUSES / "torch_parametrizations.py"), "--kind", "spectral_norm"]),
    ("torch orthogonal (Linear)", [str(CAUSES / "torch_parametrizations.py"), "--kind", "orthogonal"]),
    ("torchao quantize_ + unwrap_tensor_subclass", [str(CAUSES / "torchao_unwrap.py"), "--unwrap"]),
    ("peft LoRA target_parameters (Mixtral)", [str(DIFF / "mixtral_lora_target_parameters.py")]),
]


def libraries(tmp: Path) -> list[str]:
    rows = ["| model | parametrization cause | share of compile | named in the summary | verdict |",
            "|---|---|---|---|---|"]
    for name, script in LIBRARIES:
        try:
            s = profile(script, tmp / "lib")
        except SystemExit as e:
            rows.append(f"| {name} | could not run: {str(e).splitlines()[-1][:80]} | | | |")
            continue
        cause = s.axes.causes.get("parametrization", 0.0) if s.axes else 0.0
        named = [f.text for f in findings(s) if f.key == "cause:parametrization"]
        detail = ", ".join(list((s.axes.parametrizations if s.axes else {}).keys())[:2])
        rows.append(f"| {name} | {cause:.2f} s ({detail}) | {100 * cause / max(s.total_compile_s, 1e-9):.0f}% "
                    f"| {'yes' if named else 'NO'} | {hottest(s)[:160].replace('|', '/')} |")
        print(rows[-1], file=sys.stderr)
    return rows


def restarts(tmp: Path) -> list[str]:
    s = profile([str(ROOT / "samples" / "restart_analysis.py"), "--depth", "60"], tmp / "restart")
    ax = s.axes
    waste = ax.restart_waste if ax else None
    found = [f.text for f in findings(s) if f.key == "restarts"]
    return [f"- restart waste {waste.seconds if waste else 0:.3f} s, by cause {waste.by_cause if waste else {}}",
            f"- restart finding: {found[0] if found else 'none'}", f"- verdict: {hottest(s)}"]


REMEDIES: list[tuple[str, list[str], list[str]]] = [
    ("fold parametrizations before compiling (seed, eager)",
     [str(SEED), "--parametrize", "--backend", "eager", "--device", "cpu"],
     [str(SEED), "--parametrize", "--fold", "--backend", "eager", "--device", "cpu"]),
    ("fold parametrizations before compiling (seed, inductor)",
     [str(SEED), "--parametrize", "--backend", "inductor", "--device", "cpu"],
     [str(SEED), "--parametrize", "--fold", "--backend", "inductor", "--device", "cpu"]),
    ("register parametrizations outside forward: peft merge_and_unload() (Mixtral, target_parameters)",
     [str(CAUSES / "peft_merge.py")], [str(CAUSES / "peft_merge.py"), "--merge"]),
    ("no unwrap_tensor_subclass for torch.compile (torchao, aot_eager)",
     [str(CAUSES / "torchao_unwrap.py"), "--unwrap"], [str(CAUSES / "torchao_unwrap.py"), "--no-unwrap"]),
    ("mark_dynamic / dynamic=True for a changing size (12 sizes)",
     [str(CAUSES / "changing_sizes.py")], [str(CAUSES / "changing_sizes.py"), "--dynamic"]),
    ("gc.freeze() once the model is built, before compiling (seed, eager)",
     [str(SEED), "--parametrize", "--backend", "eager", "--device", "cpu"],
     [str(SEED), "--parametrize", "--gc-freeze", "--backend", "eager", "--device", "cpu"]),
    ("move the graph-breaking print() out of the compiled code",
     [str(CAUSES / "graph_break.py")], [str(CAUSES / "graph_break.py"), "--fixed"]),
]


def remedies(rounds: int, tmp: Path) -> list[str]:
    rows = ["| remedy | compile before | compile after | drop | before: finding | ", "|---|---|---|---|---|"]
    for name, before, after in REMEDIES:
        b, a, texts = [], [], ""
        for _ in range(rounds):
            sb = profile(before, tmp / "before", NO_CACHE)
            b.append(sb.total_compile_s)
            a.append(profile(after, tmp / "after", NO_CACHE).total_compile_s)
            texts = hottest(sb)
        mb, ma = statistics.median(b), statistics.median(a)
        rows.append(f"| {name} | {mb:.2f} s | {ma:.2f} s | {mb / ma:.1f}x | {texts[:140].replace('|', '/')} |")
        print(rows[-1], file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="accuracy,libraries,restarts,remedies")
    ap.add_argument("--backends", default="inductor,aot_eager,eager")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    sections = [s.strip() for s in args.sections.split(",")]
    out: list[str] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "accuracy" in sections:
            out += ["## Accuracy: causes.parametrization vs the compile-time difference", ""]
            out += [*accuracy([b.strip() for b in args.backends.split(",")], args.rounds, tmp), ""]
        if "libraries" in sections:
            out += ["## Libraries that apply parametrizations", "", *libraries(tmp), ""]
        if "restarts" in sections:
            out += ["## Restarts", "", *restarts(tmp), ""]
        if "remedies" in sections:
            out += ["## Remedies, applied", "", *remedies(max(1, args.rounds // 2), tmp), ""]
    print("\n".join(out))


if __name__ == "__main__":
    main()
