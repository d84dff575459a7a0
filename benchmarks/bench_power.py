"""Power of compare's noise verdict: does it call known changes real?

Two known changes, each measured as PAIRS pairs of N BASE runs against N NEW runs (a fresh process
per run, empty compiler caches of its own), compared as ``dynaprof compare`` does
(``analysis.noise``):

* **the seed sample**, plain against parametrized (``samples/parametrized_linear.py``, eager
  backend): the total compile time and the ``parametrization`` cause should read *slower*;
* **a 5% knob**: one eager-compiled function of OPS chained ops against the same function with
  5% more ops. The FX graph node count changes exactly (``fx_nodes``); whether its seconds read as a
  change is what this measures, on this machine's noise.

Every pair whose verdict is *slower* counts as detected; the printed rate is the power. Runs of the
two sides alternate (``dynaprof compare --base A1 .. --new B1 ..`` pools them); the knob is also
measured the way two ``--repeat N`` blocks make its runs, all BASE then all NEW, to show what a
machine's drift does to that.

    .venv/bin/python benchmarks/bench_power.py --pairs 5 --n 5     # ~100 runs, a few minutes on CPU
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.analysis.compare import compare_sessions  # noqa: E402
from dynaprof.analysis.repeats import pool  # noqa: E402
from dynaprof.model import load_session  # noqa: E402
from dynaprof.model.session import Session  # noqa: E402

KNOB = """
import sys
import torch

OPS = int(sys.argv[1])


@torch.compile(backend="eager")
def f(x):
    for i in range(OPS):
        x = torch.relu(x + i) if i % 2 else torch.sin(x * 0.5)
    return x.sum()


f(torch.randn(32, 32))
"""


def one_run(out: Path, script: list[str], cwd: Path) -> Session:
    """One profiled run in a fresh process, with empty compiler caches of its own."""
    caches = out.parent / (out.name + "-caches")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"), "TRITON_CACHE_DIR": str(caches / "triton")}
    cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "-o", str(out), *script]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(script)} failed: {proc.stderr.strip()[-400:]}")
    return load_session(out)


def sides(n: int, base_cmd: list[str], new_cmd: list[str], tmp: Path, tag: str,
          alternate: bool) -> tuple[Session, Session]:
    """N runs of each side, pooled as ``compare --base ... --new ...`` pools them: alternating BASE
    and NEW runs, or (``alternate=False``) a block of N BASE runs then N NEW runs, as two
    ``--repeat N`` invocations make them."""
    order = [(side, i) for i in range(n) for side in ("base", "new")] if alternate else \
        [(side, i) for side in ("base", "new") for i in range(n)]
    runs: dict[str, list[Session]] = {"base": [], "new": []}
    for side, i in order:
        cmd = base_cmd if side == "base" else new_cmd
        runs[side].append(one_run(tmp / f"{tag}-{side}-{i}", cmd, tmp))
    return pool(runs["base"]), pool(runs["new"])


def fx_nodes(s: Session) -> int | None:
    counts = [f.graph_node_count for f in s.frames]
    return None if any(c is None for c in counts) else sum(c or 0 for c in counts)


def measure(name: str, base_cmd: list[str], new_cmd: list[str], pairs: int, n: int, tmp: Path,
            cause: str | None, alternate: bool) -> list[str]:
    how = "BASE and NEW runs alternating" if alternate else f"{n} BASE runs, then {n} NEW runs"
    rows = [f"\n### {name} ({how})\n", "| pair | total compile: ratio of medians | 95% interval | verdict | "
            + (f"cause {cause}: verdict | " if cause else "") + "FX nodes BASE -> NEW |",
            "| ---: | ---: | ---: | --- | " + ("--- | " if cause else "") + "---: |"]
    hits = cause_hits = 0
    spreads = []
    for p in range(pairs):
        base, new = sides(n, base_cmd, new_cmd, tmp, f"{name.split(':')[0]}-{alternate}-{p}", alternate)
        verdicts = compare_sessions(base, new).noise
        lead = verdicts[0]
        hits += lead.verdict == "slower"
        cells = [str(p + 1), lead.change_text(), lead.interval_text(), lead.verdict]
        if cause:
            cv = next((v for v in verdicts if v.what == f"cause {cause}"), None)
            cause_hits += cv is not None and cv.verdict == "slower"
            cells.append(cv.verdict if cv is not None else "no verdict")
        cells.append(f"{fx_nodes(base)} -> {fx_nodes(new)}")
        rows.append("| " + " | ".join(cells) + " |")
        for s in (base, new):
            times = [r.compile_s for r in s.repeats]
            spreads.append(statistics.stdev(times) / statistics.median(times) if len(times) > 1 else 0.0)
    rows.append(f"\npower (total compile read *slower*): {hits} of {pairs} pairs ({hits / pairs:.0%})"
                + (f"; cause {cause}: {cause_hits} of {pairs}" if cause else "")
                + f"; run-to-run spread (stdev/median within a side): median {statistics.median(spreads):.0%}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--n", type=int, default=5, help="runs per side")
    ap.add_argument("--ops", type=int, default=200, help="ops in the knob's BASE function (NEW: 5%% more)")
    args = ap.parse_args()
    seed = str(ROOT / "samples/parametrized_linear.py")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "knob.py").write_text(KNOB)
        more = round(args.ops * 1.05)
        out = measure("seed: plain -> parametrized (eager)", [seed, "--no-parametrize", "--backend", "eager"],
                      [seed, "--parametrize", "--backend", "eager"], args.pairs, args.n, tmp, "parametrization", True)
        for alternate in (True, False):
            out += measure(f"knob: {args.ops} -> {more} ops (eager)", [str(tmp / "knob.py"), str(args.ops)],
                           [str(tmp / "knob.py"), str(more)], args.pairs, args.n, tmp, None, alternate)
    print(f"{args.pairs} pairs of {args.n} vs {args.n} runs per change")
    print("\n".join(out))


if __name__ == "__main__":
    main()
