"""Do dynaprof's backward compiles agree with tlparse's backward compilation metrics pages?

    .venv/bin/python benchmarks/bench_training_tlparse.py [--backend aot_eager inductor] [--layers 4] [--json OUT]

For each backend, one ``dynaprof run --torch-trace`` of ``samples/training_step.py`` (plain model,
two steps, compiled optimizer; ``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1`` so the backward is compiled,
not loaded) gives a live session and a TORCH_TRACE log of the same run. ``tlparse LOG -o OUT
--no-browser`` renders the log; its backward pages (``bwd_compilation_metrics_N.html`` under each
compile id in ``compile_directory.json``, with the raw record in ``raw.jsonl``) are compared with
the backward entries (``kind: backward``) of the imported log and of the live session:

* the same backward compile ids, as many of each (a forward split into several graphs, as DDP's
  optimizer does, has one backward page and one backward entry per graph);
* the duration: ``duration_us`` of tlparse's record is ``compile_time_s``;
* what the page shows: its ``Inductor`` and ``Code Gen Time`` seconds are the entry's
  ``inductor_compile_time_s`` / ``code_gen_time_s`` metrics (absent on both with ``aot_eager``),
  and "No failures!" is an entry with status ``ok``.

Prints one line per backend and source, and each mismatch; exit status 1 when any. The test
``tests/e2e/test_training.py::test_backward_pages_agree_with_tlparse`` calls ``compare``.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from dynaprof.ingest.trace_to_session import build_session  # noqa: E402
from dynaprof.model.session import Session  # noqa: E402
from dynaprof.model.store import load_session  # noqa: E402

SAMPLE = ROOT / "samples" / "training_step.py"
_PAGE = re.compile(r"bwd_compilation_metrics_(\d+)\.html$")
_INDUCTOR = re.compile(r"Inductor(?: \[\?\])? ?: ([-+0-9.eE]+)")
_CODEGEN = re.compile(r"Code Gen Time ?: ([-+0-9.eE]+)")
_TAG = re.compile(r"<[^>]*>")


@dataclass
class Page:
    """One backward compilation metrics page of tlparse, with its raw record."""

    compile_id: str
    url: str
    inductor_s: float | None  # the page's "Inductor" line (None: not shown)
    code_gen_s: float | None  # the page's "Code Gen Time" line
    failures: bool  # the page lists a failure (not "No failures!")
    duration_s: float | None  # raw.jsonl: duration_us


def tlparse_exe() -> str | None:
    return shutil.which("tlparse", path=str(Path(sys.executable).parent)) or shutil.which("tlparse")


def backward_pages(out: Path) -> list[Page]:
    """tlparse's backward pages in ``out`` (its ``-o`` folder), in log order."""
    directory = json.loads((out / "compile_directory.json").read_text())
    found: list[tuple[int, str, str]] = []
    for key, v in directory.items():
        for a in v["artifacts"]:
            m = _PAGE.search(str(a["name"]))
            if m:
                found.append((int(m.group(1)), str(key).strip("[]"), str(a["url"])))
    raw: dict[str, list[float | None]] = {}
    for line in (out / "raw.jsonl").read_text().splitlines():
        row = json.loads(line)
        m = row.get("bwd_compilation_metrics") or row.get("aot_autograd_backward_compilation_metrics")
        if isinstance(m, dict):
            us = m.get("duration_us")
            raw.setdefault(str(m.get("compile_id")), []).append(us / 1e6 if isinstance(us, (int, float)) else None)
    pages = []
    for _, cid, url in sorted(found):
        text = html.unescape(_TAG.sub(" ", (out / url).read_text()))
        text = " ".join(text.split())
        ind, gen = _INDUCTOR.search(text), _CODEGEN.search(text)
        durations = raw.get(cid) or [None]
        pages.append(Page(cid, url, float(ind.group(1)) if ind else None, float(gen.group(1)) if gen else None,
                          "No failures!" not in text, durations.pop(0)))
    return pages


def compare(pages: list[Page], session: Session) -> list[str]:
    """What differs between tlparse's backward pages and the session's backward entries (empty:
    they agree)."""
    bws = [f for f in session.frames if f.kind == "backward"]
    problems = []
    want, got = Counter(p.compile_id for p in pages), Counter(f.compile_id for f in bws)
    if want != got:
        problems.append(f"backward compile ids: tlparse {dict(want)}, dynaprof {dict(got)}")
    by_cid: dict[str, list[Page]] = {}
    for p in pages:
        by_cid.setdefault(p.compile_id, []).append(p)
    for f in bws:
        queue = by_cid.get(f.compile_id)
        if not queue:
            continue
        p = queue.pop(0)
        pairs = [("duration", p.duration_s, f.compile_time_s),
                 ("Inductor", p.inductor_s, f.metrics.get("inductor_compile_time_s")),
                 ("Code Gen Time", p.code_gen_s, f.metrics.get("code_gen_time_s"))]
        for what, theirs, ours in pairs:
            if (theirs is None) != (ours is None) or (
                    theirs is not None and abs(float(theirs) - float(ours)) > 1e-6):  # type: ignore[arg-type]
                problems.append(f"{f.key}: {what} tlparse {theirs}, dynaprof {ours}")
        if p.failures != (f.status == "failed"):
            problems.append(f"{f.key}: failures on tlparse's page {p.failures}, dynaprof status {f.status}")
    return problems


def measure(backend: str, work: Path, layers: int = 4, tlparse: str | None = None) -> dict[str, object]:
    """One run of the training step under ``dynaprof run --torch-trace``, compared with tlparse."""
    exe = tlparse or tlparse_exe()
    if exe is None:
        raise SystemExit("tlparse is not installed (pip install tlparse)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "OMP_NUM_THREADS": "1"}
    work.mkdir(parents=True, exist_ok=True)
    run, trace, out = work / "run", work / "trace", work / "tl_out"
    cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "-o", str(run), "--torch-trace", str(trace),
           str(SAMPLE), "--no-parametrize", "--backend", backend, "--layers", str(layers), "--steps", "2",
           "--compile-optimizer"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work, env=env, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"dynaprof run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    (log,) = trace.glob("*.log")
    tl = subprocess.run([exe, str(log), "-o", str(out), "--overwrite", "--no-browser"], capture_output=True,
                        text=True, timeout=300)
    if tl.returncode != 0:
        raise SystemExit(f"tlparse failed ({tl.returncode}): {tl.stderr[-2000:]}")
    pages = backward_pages(out)
    live, imported = load_session(run / "session.json"), build_session(log)
    return {
        "backend": backend,
        "pages": [asdict(p) for p in pages],
        "imported": compare(pages, imported),
        "live": compare(pages, live),
        "backward_s": {f.key: f.compile_time_s for f in imported.frames if f.kind == "backward"},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", nargs="+", default=["aot_eager", "inductor"])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--tlparse", help="the tlparse executable (default: beside this python, then PATH)")
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args()
    results, bad = [], 0
    for backend in args.backend:
        with tempfile.TemporaryDirectory() as tmp:
            r = measure(backend, Path(tmp), args.layers, args.tlparse)
        results.append(r)
        pages = r["pages"]
        assert isinstance(pages, list)
        shown = ", ".join(f"{pg['compile_id']} {pg['duration_s']:.4f} s" + (
            f" (Inductor {pg['inductor_s']:.3f} s, Code Gen {pg['code_gen_s']:.3f} s)"
            if pg["inductor_s"] is not None else "") for pg in pages)
        for source in ("imported", "live"):
            problems = r[source]
            assert isinstance(problems, list)
            bad += bool(problems)
            verdict = "agree" if not problems else f"{len(problems)} mismatch(es)"
            print(f"{backend:10} {source:8} {len(pages)} backward page(s): {shown or 'none'}: {verdict}")
            for line in problems:
                print(f"    {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
