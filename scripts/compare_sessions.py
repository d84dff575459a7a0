#!/usr/bin/env python3
"""Do two dynaprof trees build the same session.json from the same inputs?

Each input (a capture journal ``*.jsonl``, a TORCH_TRACE log file or a folder of them; a folder
is searched for ``*.jsonl``, ``*.log``, ``*.txt`` and ``*.log.gz``) is assembled or imported by
each tree in a fresh process (``PYTHONPATH=<tree>``), the attribution applied as the CLI does,
and the two session.json texts compared byte for byte. An input one tree rejects (not a trace
log, ...) compares its error line instead.

``--capture SCRIPT`` first runs SCRIPT under each tree's capture child (``dynaprof run``'s,
writing a journal that is kept, which ``dynaprof run`` deletes once the run folder is saved),
compares the record kinds and counts of the two journals (timings differ from run to run, so
nothing finer), and adds the first tree's journal to the inputs.

    python scripts/compare_sessions.py --a /work/main --b . journal.jsonl /path/to/logs/
    python scripts/compare_sessions.py --a main --b . tests/data/torch_trace   # a commit: git archive
    python scripts/compare_sessions.py --a /work/main --b . --capture samples/x.py

Prints one line per input that differs and a summary; writes the unified diffs to ``--out``.
Exit status: 0 when every input gives the same bytes (and the capture the same record counts),
1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: run by each tree: build one input's session and write its session.json text (or its error)
BUILD = r"""
import sys
from pathlib import Path

import dynaprof

assert dynaprof.__file__.startswith(sys.argv[3]), (dynaprof.__file__, sys.argv[3])

from dynaprof.model.store import session_to_text

src, out = Path(sys.argv[1]), Path(sys.argv[2])
try:
    if src.suffix == ".jsonl":
        from dynaprof.capture.journal import read_journal
        from dynaprof.ingest.assemble import ParentFacts, assemble

        facts = ParentFacts(command=["compare"], exit_status=None, run_dir=str(src.parent))
        session = assemble((r for _, r in read_journal(src)), facts)
    else:
        from dynaprof.ingest.trace_to_session import import_torch_trace

        session = import_torch_trace(src)
    from dynaprof.analysis.attribution import apply_attribution

    apply_attribution(session)
    text = session_to_text(session)
except Exception as e:  # the same rejection in both trees is the same result
    text = f"error: {type(e).__name__}: {e}\n"
out.write_text(text)
"""

#: run by each tree: the capture child on one script, its journal kept
CAPTURE = r"""
import sys

import dynaprof

assert dynaprof.__file__.startswith(sys.argv[4]), (dynaprof.__file__, sys.argv[4])

from dynaprof.capture.child import ChildConfig
from dynaprof.capture.launcher import launch

script, journal, trace = sys.argv[1:4]
open(journal, "wb").close()
result = launch(ChildConfig(journal=journal, kind="script", target=script, args=[], torch_trace_dir=trace))
sys.exit(result.exit_status)
"""

PATTERNS = ("*.jsonl", "*.log", "*.txt", "*.log.gz")
#: record kinds whose counts follow the sampler's timing (samples, the functions they name): shown, not compared
TIMED_KINDS = frozenset({"stacks", "fn"})


def _run(tree: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    # run in the tree: ``python -c`` puts the working folder first on sys.path, before PYTHONPATH
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=tree, text=True, capture_output=True,
                          check=False)


def _archive(rev: str, repo: Path, dest: Path) -> Path:
    """The tree of commit ``rev`` of ``repo``, unpacked into ``dest`` (no worktree, no checkout)."""
    dest.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(["git", "-C", str(repo), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    return dest


def _inputs(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted({f for pat in PATTERNS for f in p.rglob(pat) if f.is_file() and f.stat().st_size > 0})
        else:
            out.append(p)
    return out


def _record_counts(journal: Path) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for line in journal.read_text().splitlines():
        try:
            counts[str(json.loads(line).get("t"))] += 1
        except (ValueError, AttributeError):
            counts["<torn line>"] += 1
    return counts


def capture(script: Path, a: Path, b: Path, work: Path, tag: str) -> tuple[bool, Path]:
    """Run ``script`` under both trees' capture; True when the journals hold the same record kinds
    and counts. Returns the first tree's journal."""
    counts = []
    journals = []
    for name, tree in (("a", a), ("b", b)):
        journal = work / f"capture-{tag}-{name}.jsonl"
        done = _run(tree, CAPTURE, str(script.resolve()), str(journal), str(work / f"trace-{tag}-{name}"), str(tree))
        if done.returncode != 0:
            print(f"capture under {tree}: exit status {done.returncode}\n{done.stderr[-2000:]}")
        counts.append(_record_counts(journal))
        journals.append(journal)
    kinds = sorted(set(counts[0]) | set(counts[1]))
    same = all(counts[0][k] == counts[1][k] for k in kinds if k not in TIMED_KINDS)
    print(f"capture of {script}: journal record kinds and counts ({a} | {b}):")
    for k in kinds:
        mark = "" if counts[0][k] == counts[1][k] else "   (sampler timing)" if k in TIMED_KINDS else "   <-- differs"
        print(f"  {k:14} {counts[0][k]:6} {counts[1][k]:6}{mark}")
    return same, journals[0]


def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n"
    except ValueError:
        return text


def _changed_paths(a: object, b: object, path: str = "") -> list[str]:
    """The JSON paths where ``a`` and ``b`` differ (list indices as ``[*]``), each once."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in dict.fromkeys([*a, *b]) for p in _changed_paths(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return list(dict.fromkeys(p for x, y in zip(a, b, strict=True) for p in _changed_paths(x, y, f"{path}[*]")))
    return [] if a == b else [path or "."]


def _where(texts: list[str]) -> str:
    try:
        paths = _changed_paths(json.loads(texts[0]), json.loads(texts[1]))
    except ValueError:
        return "not JSON"
    return ", ".join(paths[:8]) + (f" and {len(paths) - 8} more" if len(paths) > 8 else "")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", type=Path, required=True, help="the first tree (e.g. /work/main), or a commit of --b's repo")
    p.add_argument("--b", type=Path, required=True, help="the second tree (e.g. a worktree)")
    p.add_argument("--out", type=Path, default=None, help="folder for the diffs (default: a temporary one)")
    p.add_argument("--capture", type=Path, action="append", default=[], help="a script to capture under both trees")
    p.add_argument("inputs", type=Path, nargs="*")
    args = p.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="compare-sessions-"))
    out.mkdir(parents=True, exist_ok=True)
    b = args.b.resolve()
    a = args.a.resolve() if args.a.is_dir() else _archive(str(args.a), b, out / "tree-a")
    ok = True
    inputs = _inputs(args.inputs)
    for n, script in enumerate(args.capture):
        same, journal = capture(script, a, b, out, f"{n}-{script.stem}")
        ok &= same
        inputs.append(journal)
    differ = 0
    for i, src in enumerate(inputs):
        texts = []
        for name, tree in (("a", a), ("b", b)):
            dest = out / f"{i:03d}-{name}.json"
            done = _run(tree, BUILD, str(src.resolve()), str(dest), str(tree))
            texts.append(dest.read_text() if dest.exists() else f"crashed: {done.stderr[-2000:]}")
        if texts[0] != texts[1]:
            differ += 1
            a_text, b_text = _pretty(texts[0]), _pretty(texts[1])
            diff = difflib.unified_diff(a_text.splitlines(True), b_text.splitlines(True), f"a/{src}", f"b/{src}")
            (out / f"{i:03d}.diff").write_text("".join(diff))
            print(f"differs: {src}: {_where(texts)}  (diff: {out / f'{i:03d}.diff'})")
    print(f"{len(inputs)} inputs: {len(inputs) - differ} give the same session.json bytes, {differ} differ "
          f"({a} vs {b}; diffs in {out})")
    return 0 if ok and differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
