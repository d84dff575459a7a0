"""The same profile from several revisions of dynaprof, alternated in one sitting: does a change
move what dynaprof attributes, or what it costs?

Each revision is exported (``git archive``) into a temporary folder; each round runs the seed
(``samples/parametrized_linear.py``, parametrized unless ``--plain``; or ``--script``, a command
line relative to the tree) under ``dynaprof run`` from every revision in turn, in an order that
alternates between rounds, each in a fresh process with Inductor's caches off. Per revision: the
share of compile time ``causes.parametrization`` takes (median [lowest-highest]), the compile
time, and, with the builtin sampler, what it measured it cost. The interpreter and torch are this
one's for every revision.

    .venv/bin/python benchmarks/bench_revisions.py --revs 7e35bb6^,4c196ac,4759dd0 --rounds 8
    .venv/bin/python benchmarks/bench_revisions.py --revs HEAD~1,HEAD --backend aot_eager -- --sampler none
    .venv/bin/python benchmarks/bench_revisions.py --revs HEAD~1,HEAD \
        --script "benchmarks/causes/torchao_unwrap.py --unwrap"
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.model import load_session  # noqa: E402


def export(rev: str, into: Path) -> Path:
    """``rev``'s tracked files in ``into``; SystemExit naming the revision when git cannot."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"git archive {rev}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def profile(tree: Path, out: Path, args: argparse.Namespace) -> tuple[float, float, float | None]:
    """(compile seconds, the parametrization's share of them, the sampler's measured cost share)."""
    flag = "--no-parametrize" if args.plain else "--parametrize"
    script = (shlex.split(args.script) if args.script else
              ["samples/parametrized_linear.py", flag, "--backend", args.backend, "--device", "cpu"])
    cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "--force", "--exports", "none", "-o", str(out),
           *args.options, *script]
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True,
                          env={**os.environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
    if proc.returncode != 0:
        raise SystemExit(f"{tree.name}: dynaprof run failed:\n{proc.stderr[-2000:]}")
    s = load_session(out)
    total = s.total_compile_s
    share = (s.axes.causes.get("parametrization", 0.0) if s.axes else 0.0) / total if total > 0 else 0.0
    cost = s.samples.cost_s if s.samples is not None else None  # None from a revision that did not record it
    return total, share, (cost / total if cost is not None and total > 0 else None)


def spread(values: list[float], pct: bool = True) -> str:
    f = (lambda v: f"{100 * v:.1f}%") if pct else (lambda v: f"{v:.2f} s")
    return f"{f(statistics.median(values))} [{f(min(values))}-{f(max(values))}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--revs", required=True, help="comma-separated git revisions")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--backend", default="eager")
    ap.add_argument("--plain", action="store_true", help="the seed without parametrization")
    ap.add_argument("--script", default="", help="another script and its arguments, relative to the tree")
    ap.add_argument("options", nargs="*", help="after --: more dynaprof run options")
    args = ap.parse_args()
    revs = [r.strip() for r in args.revs.split(",") if r.strip()]
    got: dict[str, list[tuple[float, float, float | None]]] = {r: [] for r in revs}
    with tempfile.TemporaryDirectory() as d:
        trees = {r: export(r, Path(d) / f"rev{i}") for i, r in enumerate(revs)}
        for n in range(args.rounds):
            for r in revs if n % 2 == 0 else revs[::-1]:
                got[r].append(profile(trees[r], Path(d) / "run", args))
            print(f"round {n + 1}/{args.rounds} done", file=sys.stderr)
    what = args.script or f"seed, {'plain' if args.plain else 'parametrized'}, {args.backend}"
    print(f"{what}; {args.rounds} rounds alternated; "
          f"options: {' '.join(args.options) or 'none'}\n")
    print("| revision | parametrization's share of compile | compile | sampler's measured cost |")
    print("|---|---|---|---|")
    for r in revs:
        rows = got[r]
        costs = [c for _t, _s, c in rows if c is not None]
        print(f"| {r} | {spread([s for _t, s, _c in rows])} | {spread([t for t, _s, _c in rows], pct=False)} "
              f"| {spread(costs) if costs else 'n/a'} |")


if __name__ == "__main__":
    main()
