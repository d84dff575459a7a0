"""The spread of every exact work count across repeated runs of the same program.

Runs each case ``--runs`` (3) times, each ``dynaprof run --cprofile --sampler none`` in a fresh
process with a fresh, empty Inductor cache folder, and tabulates for every count the session
totals: bytecode instructions traced, inlined calls, FX graph nodes and ops, ops after AOT autograd
(forward frames, backward frames), Inductor IR nodes and kernels, guards, restarts, graph breaks,
compiled frames and the Python calls made while compiling (cProfile's count). A count is
*identical* when every run gave the same number, *SPREAD d* when they differed by ``d`` (min and
max shown), ``-`` where no run measured it (a backend without AOT autograd, without Inductor).
The cases: the seed sample parametrized and plain (aot_eager), its training step (a lazy backward
compile), the graph-break / recompile sample (eager), a two-layer GPT-2 built from a config (no
download) in a training step, and one Inductor row. The GPT-2 row runs under ``--transformers-python``
(a Python with transformers and torch; skipped when it is missing). ``--hash-seed N`` gives every
run the same ``PYTHONHASHSEED`` (by default each has its own, as a user's runs do: the order of a
set of strings, and so the Python calls of a compile, can differ). docs/reports.md keeps the tables.

    .venv/bin/python benchmarks/bench_counts.py --runs 3 --transformers-python /tmp/bvenv/bin/python
    .venv/bin/python benchmarks/bench_counts.py --runs 3 --transformers-python /tmp/bvenv/bin/python --hash-seed 0
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.model import load_session  # noqa: E402
from dynaprof.model.session import CompiledFrame, Session  # noqa: E402

SAMPLES = ROOT / "samples"

TINY_GPT2 = textwrap.dedent("""\
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64)
    model = GPT2LMHeadModel(cfg)  # built from a config: nothing is downloaded
    model.train()
    ids = torch.randint(0, 256, (2, 16))
    out = torch.compile(model, backend="aot_eager")(input_ids=ids, labels=ids)
    out.loss.backward()
    print(round(float(out.loss.detach()), 4))
""")


@dataclass
class Case:
    label: str
    args: list[str]  # the script and its arguments
    python: str | None = None  # None: this interpreter


def cases(transformers_python: str | None, inductor: bool) -> list[Case]:
    seed, step = str(SAMPLES / "parametrized_linear.py"), str(SAMPLES / "training_step.py")
    out = [
        Case("seed, parametrized (aot_eager)", [seed, "--backend", "aot_eager", "--device", "cpu"]),
        Case("seed, plain (aot_eager)", [seed, "--no-parametrize", "--backend", "aot_eager", "--device", "cpu"]),
        Case("training step (aot_eager)", [step, "--no-parametrize", "--backend", "aot_eager", "--steps", "1"]),
        Case("graph breaks + recompiles (eager)", [str(SAMPLES / "graph_breaks_recompiles.py"), "--backend", "eager"]),
    ]
    if transformers_python:
        out.append(Case("GPT-2, 2 layers, training step (aot_eager)", ["tiny_gpt2.py"], transformers_python))
    if inductor:
        out.append(Case("training step (inductor)",
                        [step, "--no-parametrize", "--backend", "inductor", "--steps", "1"]))
    return out


#: the counts, in table order, with their labels
COUNTS: dict[str, str] = {
    "frames": "compiled frames",
    "instructions": "bytecode instructions traced",
    "inlined_calls": "inlined calls",
    "fx_nodes": "FX graph nodes",
    "fx_ops": "FX graph ops",
    "aot_ops_fw": "ops after AOT autograd, forward",
    "aot_ops_bw": "ops after AOT autograd, backward",
    "ir_nodes": "Inductor IR nodes",
    "kernels": "Inductor kernels",
    "guards": "guards",
    "restarts": "restarts",
    "graph_breaks": "graph breaks",
    "python_calls": "Python calls while compiling (cProfile)",
}


def _sum(values: Sequence[int | None]) -> int | None:
    """The known values' sum; None when none is known (as ``compare`` sums them)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def counts(s: Session) -> dict[str, int | None]:
    """A session's exact counts, summed over its frames."""
    fr = s.frames

    def of(kind: str) -> list[CompiledFrame]:
        return [f for f in fr if f.kind == kind]

    return {
        "frames": len(fr),
        "instructions": _sum([f.ir_count for f in fr]),
        "inlined_calls": _sum([f.inlined_calls for f in fr]),
        "fx_nodes": _sum([f.graph_node_count for f in fr]),
        "fx_ops": _sum([f.graph_op_count for f in fr]),
        "aot_ops_fw": _sum([f.aot_graph_ops for f in of("forward")]),
        "aot_ops_bw": _sum([f.aot_graph_ops for f in of("backward")]),
        "ir_nodes": _sum([f.inductor_ir_nodes for f in fr]),
        "kernels": _sum([f.inductor_kernels for f in fr]),
        "guards": _sum([f.guard_count for f in fr]),
        "restarts": sum(f.restarts for f in fr),
        "graph_breaks": sum(f.graph_breaks for f in fr),
        "python_calls": _sum([f.python_calls for f in fr]),
    }


def spread(runs: Sequence[dict[str, int | None]]) -> list[tuple[str, str, str, str]]:
    """(count, min, max, verdict) per count over the runs: ``identical``, ``SPREAD d``, ``unknown in
    k of n`` (some runs measured it, some did not: a spread too), ``-`` (no run measured it)."""
    rows = []
    for name in runs[0]:
        values = [r.get(name) for r in runs]
        known = [v for v in values if v is not None]
        if not known:
            rows.append((name, "-", "-", "-"))
            continue
        lo, hi = min(known), max(known)
        if len(known) < len(values):
            verdict = f"unknown in {len(values) - len(known)} of {len(values)}"
        else:
            verdict = "identical" if lo == hi else f"SPREAD {hi - lo}"
        rows.append((name, f"{lo:,}", f"{hi:,}", verdict))
    return rows


def _cell(lo: str, hi: str, verdict: str) -> str:
    if verdict == "-":
        return "-"
    return lo if verdict == "identical" else f"**{lo} - {hi}** ({verdict})"


def run_case(
    case: Case, runs: int, work: Path, hash_seed: str | None = None
) -> tuple[list[dict[str, int | None]], float]:
    """``runs`` fresh ``dynaprof run`` processes of one case: their counts, and the mean wall seconds."""
    results, wall = [], 0.0
    for i in range(runs):
        out = work / f"{case.label.replace(' ', '_').replace('/', '_')}-{i}"
        cache = tempfile.mkdtemp(prefix="inductor-cache-", dir=work)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_CACHE_DIR": cache, "DYNAPROF_PROGRESS": "0"}
        if hash_seed is not None:
            env["PYTHONHASHSEED"] = hash_seed
        cmd = [case.python or sys.executable, "-m", "dynaprof", "run", "-o", str(out), "--sampler", "none",
               "--cprofile", "--exports", "none", *case.args]
        t = time.perf_counter()
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
        wall += time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        results.append(counts(load_session(out)))
    return results, wall / runs


def table(measured: list[tuple[Case, list[dict[str, int | None]]]]) -> str:
    head = "| count | " + " | ".join(c.label for c, _ in measured) + " |"
    lines = [head, "| --- |" + " ---: |" * len(measured)]
    cols = [{name: _cell(lo, hi, v) for name, lo, hi, v in spread(runs)} for _, runs in measured]
    for name, label in COUNTS.items():
        lines.append(f"| {label} | " + " | ".join(col[name] for col in cols) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per case (3-5)")
    ap.add_argument("--transformers-python", help="a Python with transformers and torch for the GPT-2 row")
    ap.add_argument("--no-inductor", action="store_true", help="leave out the Inductor row (~1 min a run)")
    ap.add_argument("--hash-seed", help="PYTHONHASHSEED for every run (default: each run its own, as a user's are)")
    args = ap.parse_args()
    py = args.transformers_python
    if py and not Path(py).exists():
        print(f"no {py}: the GPT-2 row is left out", file=sys.stderr)
        py = None
    measured = []
    with tempfile.TemporaryDirectory(prefix="bench-counts-") as tmp:
        work = Path(tmp)
        (work / "tiny_gpt2.py").write_text(TINY_GPT2)
        for case in cases(py, not args.no_inductor):
            runs, wall = run_case(case, args.runs, work, args.hash_seed)
            print(f"{case.label}: {args.runs} runs, {wall:.1f} s each", file=sys.stderr)
            measured.append((case, runs))
    print(table(measured))
    spreads = [(c.label, name, v) for c, runs in measured for name, _, _, v in spread(runs)
               if v not in ("identical", "-")]
    seed = f"PYTHONHASHSEED={args.hash_seed}" if args.hash_seed is not None else "each run its own hash seed"
    print(f"\n{args.runs} runs per case, {seed}; counts that differed between runs: "
          + ("; ".join(f"{label}: {COUNTS[name]} ({v})" for label, name, v in spreads) if spreads else "none"))


if __name__ == "__main__":
    main()
