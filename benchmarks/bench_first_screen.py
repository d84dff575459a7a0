"""Does the first screen tell the truth on models nobody tuned for? (issue #33; docs/reports.md)

Each case runs in a fresh process under ``dynaprof run`` (cold Inductor cache, ``--exports none``),
then the saved session is read as a user reads the first screen:

* the verdict: which finding leads (and the cause it is given to), its length before ``try:``
  (at most 200 characters), and whether a sub-second finding leads over one ten times larger;
* recompiles the parametrization causes (a ``Parametrized*`` class's type guard), and their seconds;
* names: how many frame and cause names the terminal summary's tables show only in part, at 40
  and at 80 columns (0);
* recompiles by cause (``analysis.recompile_causes``).

    .venv/bin/python benchmarks/bench_first_screen.py                     # samples and eager models (~3 min)
    .venv/bin/python benchmarks/bench_first_screen.py --inductor          # also every bench_kernel_causes model
    .venv/bin/python benchmarks/bench_first_screen.py --cases seed --toolchain   # is the toolchain rank right?
    .venv/bin/python benchmarks/bench_first_screen.py --cases encodec encodec-fold --out /tmp/first.md
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_kernel_causes import MODELS, cold_env  # noqa: E402

from dynaprof import fmt  # noqa: E402
from dynaprof.analysis.cause_table import OTHER_CAUSES, session_cause_table  # noqa: E402
from dynaprof.analysis.findings import VERDICT_CHARS, findings  # noqa: E402
from dynaprof.analysis.recompile_causes import recompile_cause  # noqa: E402
from dynaprof.model import load_session  # noqa: E402
from dynaprof.model.session import CAUSE_PARAMETRIZATION, Session, display_name  # noqa: E402
from dynaprof.model.toolchain import repaid_seconds, toolchain_seconds  # noqa: E402
from dynaprof.render.terminal import summary_text  # noqa: E402

S = ROOT / "samples"
R = ROOT / "benchmarks" / "readability"
D = ROOT / "benchmarks" / "differential"
CASES: dict[str, tuple[str, list[str]]] = {
    "seed": ("seed, parametrized (eager)", [str(S / "parametrized_linear.py"), "--parametrize"]),
    "restarts": ("restart sample", [str(S / "restart_analysis.py")]),
    "breaks": ("graph breaks + recompiles sample", [str(S / "graph_breaks_recompiles.py")]),
    "training": ("training step sample", [str(S / "training_step.py")]),
    "lora": ("LoRA transformer sample", [str(S / "lora_transformer.py")]),
    "encodec": ("transformers EnCodec, weight_norm (eager)", [str(R / "encodec.py")]),
    "encodec-fold": ("EnCodec, weight_norm folded (eager)", [str(R / "encodec.py"), "--fold"]),
    "encodec-plain": ("EnCodec, no weight_norm (eager)", [str(R / "encodec.py"), "--plain"]),
    "hifigan": ("transformers HiFi-GAN, weight_norm (eager)", [str(R / "hifigan.py")]),
    "wav2vec2": ("transformers Wav2Vec2 (train + eval)", [str(D / "wav2vec2_tiny.py")]),
}
INDUCTOR: dict[str, tuple[str, list[str]]] = {
    "encodec-inductor": ("transformers EnCodec, weight_norm (Inductor)", [str(R / "encodec.py"), "inductor"]),
    **{f"kc-{name}": (f"bench_kernel_causes {name} (Inductor)", cmd) for name, (pkg, cmd, _plain) in MODELS.items()
       if pkg is None or importlib.util.find_spec(pkg) is not None},  # torchao is not always installed
}


def profile(argv: list[str], out: Path, env: dict[str, str] | None = None) -> tuple[Session, float]:
    start = time.perf_counter()
    env = env or cold_env(out.parent / (out.name + "-cache"))
    run = subprocess.run([sys.executable, "-m", "dynaprof", "run", "-o", str(out), "--exports", "none", *argv],
                         capture_output=True, text=True, env=dict(env, DYNAPROF_PROGRESS="0"), timeout=1200)
    if not (out / "session.json").exists():
        raise SystemExit(f"{argv}: no session (exit {run.returncode}):\n{run.stderr[-2000:]}")
    return load_session(out), time.perf_counter() - start


def _cuts(s: Session, width: int) -> int:
    """Names the summary's tables show in part: each frame the frames table lists and each cause
    and detail row of the cause x phase table must be found whole in the text (line breaks
    aside). Before this issue they were cut to ``...``."""
    text = re.sub(r"\s+", "", summary_text(s, width=width))
    shown = sorted(s.frames, key=lambda f: -(f.compile_time_s or 0.0))[:12]
    names = [f"{n} ({fmt.location(fn, ln)})" for n, fn, ln in map(display_name, shown)]
    table = session_cause_table(s, 8)
    if table is not None:
        names += [r.cause for r in table.rows if r.cause != OTHER_CAUSES]
        names += [d.label for r in table.rows for d in r.details]
    return sum(re.sub(r"\s+", "", fmt.terminal_safe(n)) not in text for n in names)


def measure(s: Session) -> dict[str, object]:
    found = findings(s)
    top = found[0] if found else None
    big = max((f.seconds for f in found), default=0.0)
    small_lead = top is not None and top.seconds < 1.0 and top.seconds < 0.05 * s.total_compile_s \
        and 10 * top.seconds <= big
    param = [f for f in found if f.key in ("recompiles", "failures", "restarts") and f.cause == CAUSE_PARAMETRIZATION]
    by: Counter[str] = Counter()
    for f in s.frames:
        if f.recompile_reason:
            rc = recompile_cause(f.recompile_reason)
            by[rc.cause if rc else "other"] += 1
    return {
        "compile_s": s.total_compile_s, "lead": f"{top.key}" + (f" ({top.cause})" if top and top.cause else "")
        if top else "-", "chars": len(top.text) if top else 0, "small_lead": small_lead,
        "param_recompiles": "; ".join(f"{f.key} {f.seconds:.2f} s" for f in param) or "-",
        "cuts": (_cuts(s, 40), _cuts(s, 80)), "verdict": top.text if top else "-",
        "frames": len(s.frames), "recompiles": ", ".join(f"{k} {n}" for k, n in by.most_common()) or "-",
    }


def table(rows: list[tuple[str, dict[str, object]]]) -> str:
    lines = ["| case | compiles | compile | leading finding | verdict chars (<= 200) | sub-second lead | "
             "given to the parametrization | recompiles by cause | names shown in part at 40 / 80 cols |",
             "|" + "---|" * 9]
    for label, r in rows:
        c40, c80 = r["cuts"]  # type: ignore[misc]
        lines.append(f"| {label} | {r['frames']} | {float(r['compile_s']):.2f} s | {r['lead']} | {r['chars']} | "  # type: ignore[arg-type]
                     f"{'yes' if r['small_lead'] else 'no'} | {r['param_recompiles']} | {r['recompiles']} | "
                     f"{c40} / {c80} |")
    lines += ["", "Verdicts:", ""] + [f"- **{label}**: {r['verdict']}" for label, r in rows]
    return "\n".join(lines) + "\n"


def toolchain_check(argv: list[str], tmp: Path) -> str:
    """Is the toolchain finding's rank (what the next run pays) right? Two runs with the same
    Inductor cache and temporary folder: the first's estimate against what the second paid."""
    env = cold_env(tmp / "toolchain-state")
    first, _ = profile(argv, tmp / "toolchain-1", env)
    second, _ = profile(argv, tmp / "toolchain-2", env)

    def setup(s: Session) -> tuple[float, float]:
        st = s.samples.stacks if s.samples else []
        return toolchain_seconds(st, s.functions), repaid_seconds(st, s.functions)

    (paid1, next1), (paid2, _) = setup(first), setup(second)
    return (f"toolchain setup of `{' '.join(Path(a).name for a in argv)}`: the first run paid {paid1:.2f} s and "
            f"estimated {next1:.2f} s for the next run; the next run (same cache and temp folder) paid {paid2:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", choices=sorted({**CASES, **INDUCTOR}), default=None)
    ap.add_argument("--inductor", action="store_true", help="also the Inductor cases (10-80 s a compile here)")
    ap.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    ap.add_argument("--toolchain", action="store_true",
                    help="also check the toolchain estimate: the seed on Inductor, twice on one cache")
    a = ap.parse_args()
    names = a.cases or [*CASES, *(INDUCTOR if a.inductor else [])]
    rows = []
    with tempfile.TemporaryDirectory(prefix="dynaprof-first-") as tmp:
        for name in names:
            label, argv = {**CASES, **INDUCTOR}[name]
            print(f"... {label}", file=sys.stderr, flush=True)
            s, wall = profile(argv, Path(tmp) / name)
            print(f"    {wall:.0f} s", file=sys.stderr, flush=True)
            rows.append((label, measure(s)))
        extra = toolchain_check(MODELS["seed"][1], Path(tmp)) if a.toolchain else ""
    text = table(rows) + (f"\n{extra}\n" if extra else "")
    print(text)
    if a.out:
        a.out.write_text(text, encoding="utf-8")
    bad = [label for label, r in rows if int(r["chars"]) > VERDICT_CHARS or r["small_lead"]]  # type: ignore[call-overload]
    if bad:
        print(f"over {VERDICT_CHARS} characters or led by a sub-second finding: {', '.join(bad)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
