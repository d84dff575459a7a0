"""Benchmark: import a large TORCH_TRACE log with dynaprof, side by side with tlparse.

Builds a synthetic log of the requested size by repeating real compile blocks (the committed
fixtures under tests/data/torch_trace/) with fresh frame ids and shifted timestamps, then runs,
each in its own child process so peak memory (``ru_maxrss`` from ``wait4``) is per tool:

* ``dynaprof``: ``import_torch_trace(log)`` (the time inside the child is reported too);
* ``tlparse``: ``tlparse LOG -o OUT --overwrite --no-browser`` (the binary from the venv).

Prints a markdown table on stdout::

    .venv/bin/python benchmarks/bench_import.py --size-mb 300
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "torch_trace"
DEFAULT_SOURCES = ("seed_layers4.log.gz", "graph_break_recompile.log.gz", "restart.log.gz")
_SLOT = re.compile(rb'(?<="frame_id": )(\d+)|(?<="compile_id": ")(\d+)(?=/)|(?<="ts": )(\d+(?:\.\d+)?)')

Part = bytes | tuple[str, float]


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def template(data: bytes, frame_offset: int) -> tuple[list[Part], int, float, float]:
    """Split a log into literal parts and slots (frame ids, timestamps).

    Returns (parts, number of frame ids used, first ts, last ts)."""
    parts: list[Part] = []
    pos, max_fid = 0, -1
    ts_lo, ts_hi = float("inf"), float("-inf")
    for m in _SLOT.finditer(data):
        parts.append(data[pos : m.start()])
        if m.group(3) is not None:
            ts = float(m.group(3))
            ts_lo, ts_hi = min(ts_lo, ts), max(ts_hi, ts)
            parts.append(("ts", ts))
        else:
            fid = int(m.group(1) or m.group(2))
            max_fid = max(max_fid, fid)
            parts.append(("fid", fid + frame_offset))
        pos = m.end()
    parts.append(data[pos:])
    return parts, max_fid + 1, ts_lo, ts_hi


def make_log(dest: Path, size_mb: float, sources: list[Path]) -> tuple[int, int]:
    """Write a synthetic log of about ``size_mb`` MB; returns (bytes, compile blocks repeated)."""
    block: list[Part] = []
    fids = 0
    lo, hi = float("inf"), float("-inf")
    for src in sources:
        parts, used, a, b = template(_read(src), fids)
        block += parts
        fids += used
        lo, hi = min(lo, a), max(hi, b)
    span = (hi - lo) + 1e6 if hi > lo else 1e6
    target = int(size_mb * 1e6)
    written = copies = 0
    with open(dest, "wb") as fh:
        while written < target:
            fid_shift, ts_shift = copies * fids, copies * span
            out = [
                p if isinstance(p, bytes) else (
                    str(int(p[1]) + fid_shift).encode() if p[0] == "fid" else repr(p[1] + ts_shift).encode()
                )
                for p in block
            ]  # fmt: skip
            chunk = b"".join(out)
            fh.write(chunk)
            written += len(chunk)
            copies += 1
    return written, copies


_CHILD = """
import json, sys, time
from pathlib import Path
t = time.perf_counter()
from dynaprof.ingest.trace_to_session import import_torch_trace
s = import_torch_trace(Path(sys.argv[1]))
print(json.dumps({"seconds": time.perf_counter() - t, "frames": len(s.frames), "warnings": s.capture.warnings}))
"""


class Result:
    """Best of several runs of one tool: wall seconds, CPU seconds (user+sys), peak RSS MiB."""

    def __init__(self) -> None:
        self.wall = self.cpu = float("inf")
        self.rss = 0.0
        self.stdout = ""
        self.status = 0

    def run(self, cmd: list[str], cwd: Path) -> None:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert p.stdout is not None
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = self.status = os.waitstatus_to_exitcode(status)
        if wall < self.wall:
            self.wall, self.stdout = wall, out.decode("utf-8", "replace")
        self.cpu = min(self.cpu, usage.ru_utime + usage.ru_stime)
        self.rss = max(self.rss, usage.ru_maxrss / 1024)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=300.0, help="size of the synthetic log (default 300)")
    ap.add_argument("--source", action="append", type=Path, help="log(s) to repeat (default: fixtures)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool; the best time is reported")
    ap.add_argument("--keep", type=Path, help="write the synthetic log here and keep it")
    ap.add_argument("--no-tlparse", action="store_true")
    args = ap.parse_args()
    sources = args.source or [FIXTURES / s for s in DEFAULT_SOURCES]
    tlparse = shutil.which("tlparse", path=str(Path(sys.executable).parent)) or shutil.which("tlparse")
    with tempfile.TemporaryDirectory(prefix="bench_import_") as tmp:
        log = args.keep or Path(tmp) / "dedicated_log_torch_trace_bench.log"
        t = time.perf_counter()
        size, copies = make_log(log, args.size_mb, sources)
        print(f"synthetic log: {size / 1e6:.0f} MB, {copies} copies of {len(sources)} logs "
              f"({time.perf_counter() - t:.1f} s to write)", file=sys.stderr)  # fmt: skip
        ours, theirs = Result(), Result()
        use_tlparse = tlparse is not None and not args.no_tlparse
        for _ in range(args.repeat):  # interleaved, so both tools see the same machine load
            ours.run([sys.executable, "-c", _CHILD, str(log)], ROOT)
            if ours.status != 0:
                print(f"dynaprof import failed (status {ours.status})", file=sys.stderr)
                return 1
            if use_tlparse:
                assert tlparse is not None
                out = Path(tmp) / "tl"  # a fresh folder each time: deleting old output is not timed
                theirs.run([tlparse, str(log), "-o", str(out), "--overwrite", "--no-browser"], ROOT)
                shutil.rmtree(out, ignore_errors=True)
        info = json.loads(ours.stdout)
        rows = [("dynaprof import_torch_trace", ours,
                 f"{info['frames']} frames; {info['seconds']:.2f} s inside the process")]  # fmt: skip
        if use_tlparse:
            assert tlparse is not None
            rows.append((f"tlparse {_version(tlparse)}", theirs, f"exit status {theirs.status}; writes its HTML"))
    print(f"\n{size / 1e6:.0f} MB TORCH_TRACE log ({copies} x {', '.join(s.name for s in sources)}); "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}\n")  # fmt: skip
    print(f"best of {args.repeat} interleaved runs per tool\n")
    print("| tool | wall time (s) | CPU time (s) | MB/s (wall) | peak RSS (MiB) | notes |")
    print("|---|---:|---:|---:|---:|---|")
    for name, r, note in rows:
        print(f"| {name} | {r.wall:.2f} | {r.cpu:.2f} | {size / 1e6 / r.wall:.0f} | {r.rss:.0f} | {note} |")
    return 0


def _version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.strip().split()[-1] if out.strip() else ""


if __name__ == "__main__":
    sys.exit(main())
