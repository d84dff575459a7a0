#!/usr/bin/env python3
"""Byte-for-byte check that two dynaprof trees write the same outputs from the same saved sessions.

    python scripts/compare_outputs.py TREE_A TREE_B [--work DIR] [--trace LOG ...] [--ranks DIR ...]
                                      [--synthetic SCALE]

1. Inputs, made once with TREE_A (kept in ``WORK/inputs`` and reused by later calls):
   ``dynaprof run samples/parametrized_linear.py`` on the ``eager`` and ``aot_eager`` backends
   (``--both --repeat 2``, so restarts, recompiles and samples are there); with ``--synthetic``,
   the benchmark's big synthetic session too.
2. Each tree in turn (``PYTHONPATH=TREE python -m dynaprof ...``), every output kind:
   ``report`` of each run folder re-rendered in place (a copy), ``report --exports gzip -o`` and
   ``--exports plain -o``, ``report`` of each TORCH_TRACE log given (``--trace``: never copied into
   the repository), ``report`` of each folder of per-rank logs (``--ranks``), ``compare`` of the two
   runs, and ``compare --normalize``. Both trees write into the same paths (``WORK/current``, then
   moved to ``WORK/A`` or ``WORK/B``), so the paths written into pages are the same.
3. Every file of ``WORK/A`` and ``WORK/B`` is compared byte for byte. A ``.gz`` file whose bytes
   differ but whose content is the same is reported apart (the container, not the data).

``--reworded OLD NEW`` replaces a wording in A's files before comparing (a change of words made on
purpose, said on the command line). Nothing is ignored except what is inherently run-specific,
listed in ``RUN_SPECIFIC``: none of the files written by ``report`` or ``compare`` holds a
wall-clock time or the process' id, so the list is empty today; the commands' stderr (which says
how long slow renderers took) is not compared.
Exits 0 when the trees agree, 1 with the list of differing files otherwise.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

#: (file name glob, why) of contents not compared: none today (see the docstring)
RUN_SPECIFIC: tuple[tuple[str, str], ...] = ()

SAMPLE = "samples/parametrized_linear.py"
BACKENDS = ("eager", "aot_eager")


def dynaprof(tree: Path, args: list[str], cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("DYNAPROF_JOBS", None)  # a base tree from before issue 50 may render in two processes with it
    proc = subprocess.run([sys.executable, "-m", "dynaprof", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: dynaprof {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")


def make_inputs(tree: Path, inputs: Path) -> list[Path]:
    """The saved run folders (made with ``tree`` once, then reused)."""
    inputs.mkdir(parents=True, exist_ok=True)
    runs = []
    for backend in BACKENDS:
        out = inputs / f"seed-{backend}"
        if not (out / "session.json").is_file():
            print(f"making {out.name} with {tree}", file=sys.stderr)
            dynaprof(tree, ["run", "-q", "--force", "-o", str(out), str(tree / SAMPLE), "--both", "--repeat", "2",
                            "--backend", backend, "--device", "cpu"], inputs)
        runs.append(out)
    return runs


def make_synthetic(tree: Path, inputs: Path, scale: float) -> Path:
    """The benchmark's synthetic session (``benchmarks/bench_scale.py``: 10,000 frames and a
    million samples at scale 1), saved once."""
    out = inputs / f"synthetic-{scale:g}"
    if not (out / "session.json").is_file():
        print(f"making {out.name} with {tree}", file=sys.stderr)
        code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1] + '/benchmarks'); "
                "from bench_scale import synthetic_session; "
                "from dynaprof.analysis.attribution import apply_attribution; "
                "from dynaprof.model.store import save_session; "
                "s = synthetic_session(int(10000 * float(sys.argv[2])), int(1000000 * float(sys.argv[2]))); "
                "apply_attribution(s); Path(sys.argv[3]).mkdir(parents=True, exist_ok=True); "
                "save_session(s, Path(sys.argv[3]))")
        subprocess.run([sys.executable, "-c", code, str(tree), str(scale), str(out)], check=True,
                       env={**os.environ, "PYTHONPATH": str(tree)})
    return out


def render_all(tree: Path, runs: list[Path], traces: list[Path], ranks: list[Path], current: Path,
               extra: list[Path]) -> None:
    """Every output kind, rendered by ``tree`` under ``current`` (``extra``: saved sessions
    re-rendered in place only)."""
    for run in extra:
        shutil.copytree(run, current / run.name)
        dynaprof(tree, ["report", "-q", str(current / run.name)], current)
    for run in runs:
        dest = current / run.name
        shutil.copytree(run, dest)
        dynaprof(tree, ["report", "-q", str(dest)], current)  # in place, as a user re-renders
        for form in ("gzip", "plain"):
            dynaprof(tree, ["report", "-q", "--exports", form, "-o", str(current / f"{run.name}-{form}"), str(run)],
                     current)
    for log in traces:
        dynaprof(tree, ["report", "-q", "-o", str(current / f"trace-{log.name}"), str(log)], current)
    for folder in ranks:
        dynaprof(tree, ["report", "-q", "-o", str(current / f"ranks-{folder.name}"), str(folder)], current)
    if len(runs) >= 2:
        dynaprof(tree, ["compare", "-o", str(current / "compare"), str(runs[0]), str(runs[1])], current)
        dynaprof(tree, ["compare", "--normalize", "-o", str(current / "compare-normalized"), str(runs[0]),
                        str(runs[1])], current)


def files(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*")) if p.is_file()}


def differences(a: Path, b: Path, reworded: Sequence[tuple[bytes, bytes]] = ()) -> tuple[list[str], list[str]]:
    """(files that differ or exist on one side only, .gz files whose content is equal but not bytes);
    ``reworded``: (old, new) wordings replaced in A's text before comparing, a change of words said."""
    fa, fb = files(a), files(b)
    differ, containers = [], []
    for rel in sorted(set(fa) | set(fb)):
        if rel not in fa or rel not in fb:
            differ.append(f"{rel}: only in {'B' if rel not in fa else 'A'}")
            continue
        da, db = fa[rel].read_bytes(), fb[rel].read_bytes()
        for old, new in reworded:
            da = da.replace(old, new)
        if da == db:
            continue
        if rel.endswith(".gz") and gzip.decompress(da) == gzip.decompress(db):
            containers.append(rel)
            continue
        at = next((i for i, (x, y) in enumerate(zip(da, db, strict=False)) if x != y), min(len(da), len(db)))
        differ.append(f"{rel}: differs from byte {at} ({len(da)} vs {len(db)} bytes): "
                      f"A {da[max(0, at - 40):at + 40]!r} B {db[max(0, at - 40):at + 40]!r}")
    return differ, containers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree_a", type=Path, metavar="TREE_A")
    ap.add_argument("tree_b", type=Path, metavar="TREE_B")
    ap.add_argument("--work", type=Path, default=Path("/tmp/dynaprof-compare-outputs"),
                    help="where inputs (kept) and both trees' outputs go")
    ap.add_argument("--trace", type=Path, action="append", default=[], metavar="LOG",
                    help="a TORCH_TRACE log to import with each tree (repeatable)")
    ap.add_argument("--ranks", type=Path, action="append", default=[], metavar="DIR",
                    help="a folder of per-rank TORCH_TRACE logs (repeatable)")
    ap.add_argument("--synthetic", type=float, metavar="SCALE",
                    help="also the benchmark's synthetic session at SCALE (1.0: 10,000 frames, 1M samples)")
    ap.add_argument("--reworded", nargs=2, action="append", default=[], metavar=("OLD", "NEW"),
                    help="a wording B changed on purpose: OLD in A's files reads as NEW (repeatable)")
    args = ap.parse_args()
    trees = [args.tree_a.resolve(), args.tree_b.resolve()]
    work = args.work.resolve()
    runs = make_inputs(trees[0], work / "inputs")
    extra = [make_synthetic(trees[0], work / "inputs", args.synthetic)] if args.synthetic else []
    traces = [t.resolve() for t in args.trace]
    ranks = [r.resolve() for r in args.ranks]
    current = work / "current"
    for label, tree in zip("AB", trees, strict=True):
        shutil.rmtree(current, ignore_errors=True)
        shutil.rmtree(work / label, ignore_errors=True)
        current.mkdir(parents=True)
        print(f"rendering with {label} = {tree}", file=sys.stderr)
        render_all(tree, runs, traces, ranks, current, extra)
        current.rename(work / label)
    differ, containers = differences(work / "A", work / "B", [(o.encode(), n.encode()) for o, n in args.reworded])
    n = len(files(work / "A"))
    for line in containers:
        print(f"same content, different gzip bytes: {line}")
    for line in differ:
        print(f"DIFFERENT: {line}")
    print(f"{n} files from A, {len(differ)} different, {len(containers)} .gz with equal content "
          f"(outputs in {work}/A and {work}/B)")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
