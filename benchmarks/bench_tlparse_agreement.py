"""Does dynaprof's TORCH_TRACE import show what tlparse shows? Run both over a folder of logs.

    .venv/bin/python benchmarks/bench_tlparse_agreement.py [FOLDER] [--tlparse PATH] [--json OUT]

FOLDER defaults to ``../shared/tlparse-logs/`` (tlparse's own test logs; see its README). Every
file under FOLDER (but README*) is a log. For each one, tlparse (``-o TMP --overwrite
--no-browser``, and again with ``--strict``) and dynaprof (``import_torch_trace``, and again with
``strict=True``) read it, and per compile id these are compared with what tlparse shows (its
``raw.jsonl`` compilation metrics and its ``compile_directory.json`` artifact list):

* restart reasons (as sets), guard and shape-env guard counts, failure type, reason and user line,
  graph op / node / input counts, compile times (entire frame, backend, Inductor, codegen,
  Dynamo before restart) and cache sizes, for every compilation-metrics entry tlparse shows;
* cache markers (FX graph / AOTAutograd cache hit, miss, bypass artifacts) per compile id;
* that every compile id dynaprof makes a frame for is one tlparse shows;
* the ``--strict`` verdicts (accept / reject), and that neither tool crashed.

A log *agrees fully* when all of these hold. Rank folders (holding ``..._rank_N[_*].log`` files)
are also checked: every rank log must be recognised. Prints one line per log and a total; exit
status 0. Run it with another dynaprof on ``PYTHONPATH`` to measure an older version.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # appended: a dynaprof on PYTHONPATH (an older checkout) wins

from dynaprof.errors import DynaprofError  # noqa: E402
from dynaprof.ingest.torch_trace import rank_logs  # noqa: E402
from dynaprof.ingest.trace_to_session import import_torch_trace  # noqa: E402
from dynaprof.model.session import CompiledFrame, Session  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "tlparse-logs"
#: CompilationMetrics fields compared (tlparse's value, dynaprof's value for the matched frame)
INT_FIELDS = ("guard_count", "shape_env_guard_count", "graph_op_count", "graph_node_count", "graph_input_count",
              "cache_size", "accumulated_cache_size")
TIME_FIELDS = ("entire_frame_compile_time_s", "backend_compile_time_s", "inductor_compile_time_s",
               "code_gen_time_s", "dynamo_time_before_restart_s")
_MARKER = re.compile(r"(fx_graph_cache|aotautograd_cache)_(hit|miss|bypass)_\d+\.json$")
_CACHE = {"fx_graph_cache": "fx_graph", "aotautograd_cache": "aot_autograd"}


def ours(f: CompiledFrame, field: str) -> Any:
    if field == "guard_count":
        return f.guard_count
    if field == "shape_env_guard_count":
        return f.guards.shape_env_count
    if field in ("graph_op_count", "graph_node_count", "graph_input_count"):
        return getattr(f, field)
    if field == "entire_frame_compile_time_s":
        return f.compile_time_s
    return f.metrics.get(field)


Entries = list[tuple[str, dict[str, Any]]]


def tlparse_view(tlparse: str, log: Path, out: Path) -> tuple[Entries, dict[str, Counter[str]]]:
    """(compile id, metrics) per compilation_metrics entry tlparse shows, in log order, and the
    cache markers tlparse lists per compile id (attempts folded together)."""
    r = subprocess.run([tlparse, str(log), "-o", str(out), "--overwrite", "--no-browser"],
                       capture_output=True, timeout=300)  # fmt: skip
    if r.returncode != 0:
        raise RuntimeError(f"tlparse exit {r.returncode}: {r.stderr.decode(errors='replace')[-300:]}")
    entries: Entries = []
    for line in (out / "raw.jsonl").read_text(errors="replace").splitlines():
        row = json.loads(line)
        m = row.get("compilation_metrics")
        if isinstance(m, dict):
            fid, fcid, ca = row.get("frame_id"), row.get("frame_compile_id"), row.get("compiled_autograd_id")
            cid = f"{fid}/{fcid}" if fid is not None and fcid is not None else None
            if ca is not None:
                cid = f"!{ca}" + (f"/{cid}" if cid else "")
            entries.append((cid or m.get("compile_id") or "-/-", m))
    markers: dict[str, Counter[str]] = {}
    directory = json.loads((out / "compile_directory.json").read_text())
    for key, v in directory.items():
        cid = re.sub(r"_\d+$", "", key.strip("[]")) if key != "(unknown)" else "-/-"
        for a in v.get("artifacts", []):
            if m2 := _MARKER.match(a["name"]):
                markers.setdefault(cid, Counter())[f"{_CACHE[m2.group(1)]}.{m2.group(2)}"] += 1
    return entries, markers


def tlparse_strict(tlparse: str, log: Path, out: Path) -> bool:
    r = subprocess.run([tlparse, str(log), "-o", str(out), "--overwrite", "--no-browser", "--strict"],
                       capture_output=True, timeout=300)  # fmt: skip
    return r.returncode == 0


def _same(a: Any, b: Any, field: str) -> bool:
    if field in TIME_FIELDS:
        return isinstance(b, (int, float)) and math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=2e-6)
    return bool(a == b)


def compare(log: Path, tlparse: str, tmp: Path) -> tuple[bool, list[str], dict[str, int]]:
    """(agrees fully, the differences, counts) for one log."""
    diffs: list[str] = []
    n = Counter[str]()
    try:
        entries, markers = tlparse_view(tlparse, log, tmp / "tl")
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return False, [f"tlparse failed: {e}"], n
    tl_ok = tlparse_strict(tlparse, log, tmp / "tls")
    try:
        s: Session | None = import_torch_trace(log)
    except DynaprofError as e:
        s = None
        if entries:
            diffs.append(f"dynaprof refused a log tlparse read: {e.message}")
    except Exception as e:  # a crash is exactly what this checks for
        return False, [f"dynaprof crashed: {type(e).__name__}: {e}"], n
    try:
        import_torch_trace(log, strict=True)
        dp_ok = True
    except DynaprofError:
        dp_ok = False
    except Exception as e:
        return False, [f"dynaprof --strict crashed: {type(e).__name__}: {e}"], n
    if s is None:
        n["strict_same"] += tl_ok == dp_ok
        return not diffs and tl_ok == dp_ok, diffs + ([] if tl_ok == dp_ok else ["--strict verdicts differ"]), n
    if tl_ok != dp_ok:
        verdict = {True: "accepts", False: "rejects"}
        diffs.append(f"--strict: tlparse {verdict[tl_ok]}, dynaprof {verdict[dp_ok]}")
    by_id: dict[str, list[CompiledFrame]] = {}
    for f in s.frames:
        by_id.setdefault(f.compile_id, []).append(f)
    used: Counter[str] = Counter()
    for cid, m in entries:
        frames = by_id.get(cid, [])
        if used[cid] >= len(frames):
            diffs.append(f"[{cid}]: tlparse shows a compile dynaprof has no frame for")
            continue
        f = frames[used[cid]]
        used[cid] += 1
        n["compiles"] += 1
        reasons = m.get("restart_reasons") or []
        if sorted(map(str, reasons)) != sorted(f.restart_reasons):
            diffs.append(f"[{cid}] restart reasons differ")
        if (m.get("fail_type"), m.get("fail_reason")) != (f.fail_type if m.get("fail_type") else None,
                                                         f.fail_reason if m.get("fail_type") else None):
            diffs.append(f"[{cid}] failure differs: {m.get('fail_type')!r} vs {f.fail_type!r}")
        if m.get("fail_user_frame_filename"):
            where = (getattr(f, "fail_filename", None), getattr(f, "fail_lineno", None))
            if where != (m["fail_user_frame_filename"], m.get("fail_user_frame_lineno")):
                diffs.append(f"[{cid}] failure source line differs: {where}")
        for field in (*INT_FIELDS, *TIME_FIELDS):
            theirs = m.get(field)
            if theirs is None:
                continue  # tlparse shows nothing there
            n["values"] += 1
            if not _same(theirs, ours(f, field), field):
                diffs.append(f"[{cid}] {field}: tlparse {theirs!r}, dynaprof {ours(f, field)!r}")
    shown = {cid for cid, _ in entries} | set(markers)
    for cid, frames in by_id.items():
        if cid not in shown and not any(f.status == "unfinished" for f in frames):
            diffs.append(f"[{cid}]: dynaprof has a compile tlparse does not show")
    for cid in set(markers) | set(by_id):
        theirs = markers.get(cid, Counter())
        mine: Counter[str] = Counter()
        for f in by_id.get(cid, []):
            for cache, c in getattr(f, "cache", {}).items():
                mine.update({f"{cache}.hit": c.hits, f"{cache}.miss": c.misses, f"{cache}.bypass": c.bypasses})
        mine = +mine
        n["markers"] += sum(theirs.values())
        if theirs != mine:
            diffs.append(f"[{cid}] cache markers: tlparse {dict(theirs)}, dynaprof {dict(mine)}")
    return not diffs, diffs, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--tlparse", default=shutil.which("tlparse", path=str(Path(sys.executable).parent)) or "tlparse")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("-v", "--verbose", action="store_true", help="every difference, not the first 3")
    args = ap.parse_args(argv)
    logs = sorted(p for p in args.folder.rglob("*") if p.is_file() and not p.name.startswith("README"))
    results: dict[str, Any] = {}
    agree = total = 0
    totals: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for log in logs:
            name = str(log.relative_to(args.folder))
            if log.stat().st_size == 0:
                print(f"  --    {name}: empty file (tlparse: 0 records; dynaprof: not a log); not counted")
                continue
            ok, diffs, n = compare(log, args.tlparse, Path(tmp))
            total += 1
            agree += ok
            totals.update(n)
            results[name] = {"agrees": ok, "differences": diffs, **n}
            shown = diffs if args.verbose else diffs[:3]
            more = f" (+{len(diffs) - len(shown)} more)" if len(diffs) > len(shown) else ""
            print(f"  {'ok' if ok else 'DIFF':<5} {name}: {n['compiles']} compiles, {n['markers']} cache markers"
                  + (": " + "; ".join(shown) + more if diffs else ""))
    folders = sorted({p.parent for p in logs if "_rank_" in p.name and p.name.endswith((".log", ".log.gz"))})
    rank_ok = 0
    for d in folders:
        files = [p for p in d.iterdir() if p.name.startswith("dedicated_log_torch_trace_rank_") and p.stat().st_size]
        found = rank_logs(d)
        same = len(found) == len({re.match(r"dedicated_log_torch_trace_rank_(\d+)", p.name).group(1)  # type: ignore[union-attr]
                                  for p in files})  # fmt: skip
        rank_ok += same
        print(f"  {'ok' if same else 'DIFF':<5} {d.relative_to(args.folder)}/: {len(files)} rank logs, "
              f"dynaprof finds ranks {sorted(found)}")
    print(f"\n{agree} of {total} logs agree fully ({totals['compiles']} compiles, {totals['values']} values, "
          f"{totals['markers']} cache markers compared); rank folders: {rank_ok} of {len(folders)} fully recognised")
    if args.json:
        args.json.write_text(json.dumps({"agree": agree, "total": total, "logs": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
