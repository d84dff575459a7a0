"""``--sampler py-spy``: py-spy samples the child from outside; its samples are tagged with
compile ids afterwards by time and thread.

py-spy cannot read frame locals, so it gives the compiler view only (with C/C++ frames under
``--native``); the traced-code view needs the builtin sampler. Rules from measuring py-spy here:
its exit status is its own (the script's comes from the child), SIGINT makes it write its output
and SIGTERM loses it, and blocking sampling above ~200 Hz slows deep Dynamo stacks a lot, so
higher rates use ``--nonblocking`` (some samples then fail; the error count is reported).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from dynaprof.capture.own_code import own_file
from dynaprof.fmt import stored_s
from dynaprof.model.session import CompiledFrame, FunctionRef, Samples, Session, Stack

OUTPUT = "pyspy-trace.json"
_COUNTS = re.compile(r"Samples:\s*(\d+)\s+Errors:\s*(\d+)")
_COMPILE_FRAME = ("_compile", "torch/_dynamo/convert_frame.py")


def find_pyspy() -> str | None:
    here = Path(sys.executable).parent / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def preflight() -> str | None:
    """None when py-spy can sample a process here, else why not (one line)."""
    exe = find_pyspy()
    if exe is None:
        return "py-spy is not installed (pip install py-spy)"
    try:
        out = subprocess.run([exe, "dump", "--pid", str(os.getpid())], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"py-spy failed to run: {e}"
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).strip().splitlines() or ["unknown error"]
        return f"py-spy cannot attach here: {lines[0][:200]}"
    return None


class PySpy:
    def __init__(self, run_dir: Path, rate_hz: float, native: bool) -> None:
        self.run_dir = run_dir
        self.rate = rate_hz
        self.native = native
        self.out = run_dir / OUTPUT
        self.proc: subprocess.Popen[str] | None = None
        self.attach_ns = 0
        self.counts: tuple[int, int] | None = None
        self.notes: list[str] = []

    def attach(self, pid: int) -> None:
        exe = find_pyspy()
        if exe is None:
            self.notes.append("py-spy is not installed: no samples")
            return
        cmd = [
            exe,
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(max(1, round(self.rate))),
            "--format",
            "chrometrace",
            "-o",
            str(self.out),
            "--idle",
            "--subprocesses",  # Inductor's compile workers
        ]
        if self.rate > 200:
            cmd.append("--nonblocking")
        if self.native:
            cmd.append("--native")
        self.attach_ns = time.time_ns()
        try:
            self.proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
            )  # Ctrl-C must not reach py-spy twice
        except OSError as e:
            self.notes.append(f"py-spy could not start: {e}")

    def finish(self) -> list[str]:
        proc = self.proc
        if proc is None:
            return self.notes
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)  # SIGINT keeps its output; SIGTERM would lose it
            out, _ = proc.communicate(timeout=20)
        m = _COUNTS.search(out or "")
        if m:
            self.counts = (int(m.group(1)), int(m.group(2)))
        if not self.out.exists() or self.out.stat().st_size == 0:
            tail = " ".join((out or "").strip().splitlines()[-2:])[:300]
            self.notes.append(f"py-spy wrote no samples (exit {proc.returncode}): {tail}")
        elif self.counts and self.counts[1]:
            n, err = self.counts
            why = " (non-blocking sampling tears some stacks)" if self.rate > 200 else ""
            self.notes.append(f"py-spy: {err} of {n + err} samples failed{why}")
        return self.notes

    def merge_into(self, session: Session) -> None:
        """Turn py-spy's trace into session samples tagged with frame keys and attempts."""
        if not self.out.exists() or self.out.stat().st_size == 0:
            return
        try:
            events = json.loads(self.out.read_text())
        except (OSError, json.JSONDecodeError) as e:
            session.capture.warnings.append(f"cannot read py-spy output {self.out}: {e}")
            return
        intervals = _intervals(events if isinstance(events, list) else [])
        workers: dict[int, float] = {}
        stacks = _assign(session, intervals, self.rate, (self.attach_ns - _epoch_ns(session)) / 1e9, workers)
        err = self.counts[1] if self.counts else 0
        window = sum(f.compile_time_s or 0.0 for f in session.frames)
        samples = sum(s.samples for s in stacks)
        session.samples = Samples(
            "py-spy",
            self.rate,
            round(samples / window, 1) if window else None,
            samples,
            stored_s(sum(s.seconds for s in stacks)),
            err,
            stacks,
        )
        session.artifacts["pyspy_trace"] = OUTPUT
        if workers:
            session.capture.warnings.append(
                f"py-spy also sampled {len(workers)} compile worker process(es): {sum(workers.values()):.1f} s of "
                "their busy time fell inside compiles (parallel work, not part of the compile's wall time, so not "
                f"in the attribution); open {OUTPUT} in Perfetto to see it"
            )
        session.capture.warnings.append(
            "py-spy sampler: compiler view only (it cannot read frame locals, so "
            "the traced-code view and parametrization detection need --sampler builtin)"
        )


def _epoch_ns(session: Session) -> int:
    import datetime

    try:
        return int(datetime.datetime.fromisoformat(session.run.start_time).timestamp() * 1e9)
    except ValueError:
        return 0


Interval = tuple[int, int, float, float, tuple[tuple[str, str, int], ...]]

#: leaf functions of a thread that is waiting, not working (py-spy runs with --idle so the
#: compiling thread's waits on compiler subprocesses count; an idle worker's do not)
_IDLE_LEAVES = {
    "wait",
    "_wait",
    "select",
    "poll",
    "epoll",
    "read",
    "recv",
    "recv_into",
    "_recv",
    "_recv_bytes",
    "accept",
    "acquire",
    "sleep",
    "get",
    "_worker",
    "_wait_for_tstate_lock",
    "readinto",
}


def _intervals(events: list[dict[str, Any]]) -> list[Interval]:
    """(pid, tid, start s, end s, stack) for every stretch where a thread's stack stayed the same."""
    open_: dict[tuple[int, int], list[tuple[str, str, int]]] = {}
    last: dict[tuple[int, int], float] = {}
    out: list[Interval] = []
    for ev in sorted(events, key=lambda e: (e.get("ts", 0), 0 if e.get("ph") == "E" else 1)):
        pid, tid = int(ev.get("pid", 0)), int(ev.get("tid", 0))
        thread = (pid, tid)
        ts = float(ev.get("ts", 0)) / 1e6
        stack = open_.setdefault(thread, [])
        if stack and thread in last and ts > last[thread]:
            out.append((pid, tid, last[thread], ts, tuple(stack)))
        last[thread] = ts
        args = ev.get("args") or {}
        name = str(ev.get("name", "?"))
        if name.startswith("thread (") or name.startswith("process "):
            continue
        if ev.get("ph") == "B":
            stack.append((name, str(args.get("filename", "")), int(args.get("line", 0) or 0)))
        elif ev.get("ph") == "E" and stack:
            stack.pop()
    return out


def _assign(
    session: Session, intervals: list[Interval], rate: float, attach_offset: float, workers: dict[int, float]
) -> list[Stack]:
    """Samples of the profiled process's compiling threads as session stacks; busy seconds of
    other processes (compile workers) during compiles go into ``workers`` by pid."""
    index: dict[tuple[str, str, str], int] = {}
    for i, fn in enumerate(session.functions):
        index[(fn.name, fn.filename, fn.kind)] = i

    def fid(name: str, filename: str, line: int) -> int:
        kind = "native" if (not filename.endswith(".py") and filename) or not filename else "python"
        key = (name, filename, kind)
        if key not in index:
            index[key] = len(session.functions)
            session.functions.append(FunctionRef(name, filename, line, kind))
        return index[key]

    own = functools.cache(own_file)  # one answer per file name, for this merge only

    def compiling(stack: tuple[tuple[str, str, int], ...]) -> bool:
        return any(n.endswith(_COMPILE_FRAME[0]) and f.endswith(_COMPILE_FRAME[1]) for n, f, _ in stack)

    main_pid = session.run.pid
    frames_by_tid: dict[int, list[CompiledFrame]] = {}
    for f in session.frames:
        frames_by_tid.setdefault(f.thread, []).append(f)
    # align py-spy's clock on the first compile it saw, per thread; else on the attach time
    offset = attach_offset
    for tid, fl in frames_by_tid.items():
        first = next((iv for iv in intervals if iv[1] == tid and compiling(iv[4])), None)
        if first is not None:
            offset = min(fl, key=lambda f: f.start_s).start_s - first[2]
            break
    agg: dict[tuple[Any, ...], list[float]] = {}
    for pid, tid, t0, t1, stack in intervals:
        mid = (t0 + t1) / 2 + offset
        if main_pid is not None and pid != main_pid:
            # a compile worker process (Inductor's subprocess pool): its busy time runs in
            # parallel with the compile, so it is reported beside the wall-time attribution
            if (
                stack
                and stack[-1][0].rsplit(".", 1)[-1] not in _IDLE_LEAVES
                and any(f.start_s <= mid <= f.start_s + (f.compile_time_s or 0.0) for f in session.frames)
            ):
                workers[pid] = workers.get(pid, 0.0) + (t1 - t0)
            continue
        if not compiling(stack):
            continue
        frame = None
        for f in frames_by_tid.get(tid, []):
            inside = f.start_s - 0.005 <= mid <= f.start_s + (f.compile_time_s or 0.0) + 0.005
            if inside and (frame is None or f.start_s > frame.start_s):
                frame = f  # the innermost (latest started) compile containing the stretch
        attempt = 0
        if frame is not None:
            for a in frame.attempts:
                if a.start_s is not None and a.start_s <= mid:
                    attempt = a.index
        start = next(
            i for i, (n, f, _) in enumerate(stack) if n.endswith(_COMPILE_FRAME[0]) and f.endswith(_COMPILE_FRAME[1])
        )
        # the compiler view starts at _compile; dynaprof's own hook wrappers are not the compile's
        ids = tuple(fid(n, fn, ln) for n, fn, ln in stack[start:] if not own(fn))
        key = (frame.key if frame is not None else None, attempt, tid, ids)
        cur = agg.setdefault(key, [0, 0.0])
        cur[0] += max(1, round((t1 - t0) * rate))
        cur[1] += t1 - t0
    return [Stack(k[0], k[1], k[2], list(k[3]), [], int(v[0]), round(v[1], 9)) for k, v in agg.items()]
