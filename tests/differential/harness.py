"""Differential check: a script run as ``python script.py`` and under ``dynaprof run`` must behave the same.

For each script, the plain run is the reference; each dynaprof mode runs the same script in the
same environment and working directory, and its exit status and stdout (with timings masked)
must equal the reference. Runs repeat, because what a sampler perturbs depends on when its ticks
land. py-spy runs are checked up front (``dynaprof.capture.pyspy.preflight``) and skipped with the
reason where py-spy cannot attach; a run whose session says it used another sampler than the one
asked for is skipped too, never counted as a py-spy run.

Used by ``tests/e2e/test_differential.py`` and ``benchmarks/bench_differential.py``; also a CLI::

    .venv/bin/python tests/differential/harness.py --repeat 3 --modes builtin,none
    .venv/bin/python tests/differential/harness.py tests/differential/scripts/finalizer_during_compile.py
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"

#: ``dynaprof run`` options per mode, and the sampler the session must then report
MODES: dict[str, tuple[tuple[str, ...], str]] = {
    "builtin": (("--sampler", "builtin"), "builtin"),
    "builtin-20k": (("--sampler", "builtin", "--rate", "20000"), "builtin"),
    "none": (("--sampler", "none"), "none"),
    "py-spy": (("--sampler", "py-spy"), "py-spy"),
    "cprofile": (("--cprofile",), "builtin"),
}
DEFAULT_MODES = ("builtin", "builtin-20k", "none", "py-spy", "cprofile")

#: what may differ between two runs of the same program: durations and object addresses
_TIMING = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]?\d+)?\s*(?:ns|us|µs|ms|s|sec|secs|seconds?|min)(?![\w])", re.IGNORECASE
)
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def mask(text: str) -> str:
    """``text`` with durations (``12 ms``, ``0.31s``) and addresses (``0x7f3a...``) replaced by placeholders."""
    return _ADDRESS.sub("<addr>", _TIMING.sub("<time>", text))


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class Run:
    mode: str
    index: int
    outcome: Outcome | None = None
    #: a readable diff against the reference when the run differs, else None
    difference: str | None = None
    #: why the run did not happen (or was not counted), else None
    skipped: str | None = None

    @property
    def matched(self) -> bool:
        return self.outcome is not None and self.skipped is None and self.difference is None


@dataclass
class ScriptReport:
    script: Path
    reference: Outcome
    #: set when repeated plain runs disagree with each other: the script is not deterministic
    unstable: str | None = None
    runs: list[Run] = field(default_factory=list)

    def runs_of(self, mode: str) -> list[Run]:
        return [r for r in self.runs if r.mode == mode]

    @property
    def mismatches(self) -> list[Run]:
        return [r for r in self.runs if r.difference is not None]


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONHASHSEED", "0")
    env.update(extra or {})
    return env


def _run(cmd: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float) -> Outcome:
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            list(cmd), cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout or ""
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr or ""
        return Outcome(-9, out, err + f"\n[harness] timed out after {timeout:g} s", time.perf_counter() - start)
    return Outcome(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - start)


def run_plain(script: Path, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 600) -> Outcome:
    """``python script.py``, with the interpreter running these tests."""
    return _run([sys.executable, str(script)], cwd, _env(env), timeout)


def run_profiled(
    script: Path, mode: str, run_dir: Path, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 600
) -> Outcome:
    """``python -m dynaprof run -q -o RUN_DIR --force <mode options> script.py``."""
    opts = MODES[mode][0]
    cmd = [sys.executable, "-m", "dynaprof", "run", "-q", "-o", str(run_dir), "--force", *opts, str(script)]
    return _run(cmd, cwd, _env(env), timeout)


def pyspy_unavailable() -> str | None:
    """Why ``--sampler py-spy`` cannot run here (dynaprof's own preflight), or None when it can."""
    sys.path.insert(0, str(ROOT))
    try:
        from dynaprof.capture.pyspy import preflight
    finally:
        sys.path.remove(str(ROOT))
    return preflight()


def skip_reason(mode: str) -> str | None:
    if mode == "py-spy":
        return pyspy_unavailable()
    return None


def sampler_used(run_dir: Path) -> str | None:
    """The sampler the saved session says it ran with (None without a readable session)."""
    try:
        session = json.loads((run_dir / "session.json").read_text())
        sampler = session["capture"]["sampler"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return sampler if isinstance(sampler, str) else None


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def difference(reference: Outcome, other: Outcome, label: str = "dynaprof") -> str | None:
    """A readable account of how ``other`` differs from ``reference`` (exit status, masked stdout), or None."""
    parts: list[str] = []
    if reference.returncode != other.returncode:
        parts.append(f"exit status: python {reference.returncode}, {label} {other.returncode}")
    a, b = mask(reference.stdout).splitlines(), mask(other.stdout).splitlines()
    if a != b:
        diff = difflib.unified_diff(a, b, "python", label, n=1, lineterm="")
        parts.append("stdout:\n" + "\n".join(diff))
    if not parts:
        return None
    if reference.returncode != other.returncode and other.stderr.strip():
        parts.append(f"{label} stderr (tail):\n{_tail(other.stderr)}")
    return "\n".join(parts)


#: the line of a traceback that names the exception (``AssertionError: ...``, ``torch._dynamo.exc.Unsupported: ...``)
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Unsupported)\b.*")


def first_difference(reference: Outcome, other: Outcome) -> str:
    """One line: the exit statuses if they differ, else the first stdout line that differs."""
    if reference.returncode != other.returncode:
        lines = [ln.strip() for ln in other.stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if _ERROR_LINE.match(ln)]
        last = (errors or lines or [""])[-1]
        return f"exit {reference.returncode} -> {other.returncode}" + (f" ({last[:160]})" if last else "")
    a, b = mask(reference.stdout).splitlines(), mask(other.stdout).splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"line {i + 1}: {x.strip()!r} -> {y.strip()!r}"
    if len(a) != len(b):
        i = min(len(a), len(b))
        extra = (a if len(a) > len(b) else b)[i].strip()
        return f"line {i + 1}: {'missing' if len(a) > len(b) else 'extra'} {extra!r}"
    return "no difference"


def check_script(
    script: Path,
    modes: Iterable[str] = DEFAULT_MODES,
    repeat: int = 1,
    env: Mapping[str, str] | None = None,
    workdir: Path | None = None,
    timeout: float = 600,
    stop_on_mismatch: bool = False,
    skips: Mapping[str, str | None] | None = None,
) -> ScriptReport:
    """Run ``script`` plainly ``repeat`` times and under each mode ``repeat`` times, and compare.

    ``env`` is added to the environment of every run, plain ones included. ``skips`` maps a mode to
    a known reason to skip it (otherwise ``skip_reason`` is asked). With ``stop_on_mismatch`` a
    mode stops repeating after its first mismatch.
    """
    script = script.resolve()
    modes = list(modes)
    with tempfile.TemporaryDirectory(prefix="dynaprof-diff-", dir=workdir) as tmp_name:
        tmp = Path(tmp_name)
        reference = run_plain(script, tmp, env, timeout)
        report = ScriptReport(script, reference)
        for i in range(1, repeat):
            again = run_plain(script, tmp, env, timeout)
            diff = difference(reference, again, "python again")
            if diff is not None and report.unstable is None:
                report.unstable = f"plain run {i + 1} differs from run 1:\n{diff}"
        reasons = dict(skips) if skips is not None else {}
        for mode in modes:
            reason = reasons[mode] if mode in reasons else skip_reason(mode)
            if reason is not None:
                report.runs.append(Run(mode, 0, skipped=reason))
                continue
            for i in range(repeat):
                run_dir = tmp / f"run-{mode}-{i}"
                outcome = run_profiled(script, mode, run_dir, tmp, env, timeout)
                run = Run(mode, i, outcome)
                used = sampler_used(run_dir)
                expected = MODES[mode][1]
                if used is not None and used != expected:
                    run.skipped = f"asked for the {expected} sampler, the session says {used}"
                else:
                    run.difference = difference(reference, outcome)
                report.runs.append(run)
                if stop_on_mismatch and run.difference is not None:
                    break
        return report


def summarize(report: ScriptReport) -> list[tuple[str, int, int, int, str]]:
    """(mode, runs, matches, mismatches, first differing line or skip reason) per mode, in run order."""
    rows: list[tuple[str, int, int, int, str]] = []
    for mode in dict.fromkeys(r.mode for r in report.runs):
        runs = report.runs_of(mode)
        skipped = [r for r in runs if r.skipped is not None]
        counted = [r for r in runs if r.skipped is None]
        bad = [r for r in counted if r.difference is not None]
        note = ""
        if bad and bad[0].outcome is not None:
            note = first_difference(report.reference, bad[0].outcome)
        elif skipped:
            note = f"skipped: {skipped[0].skipped}"
        rows.append((mode, len(counted), len(counted) - len(bad), len(bad), note))
    return rows


def format_report(report: ScriptReport) -> str:
    """Plain-text account: one line per mode, then each mismatch's diff."""
    name = report.script.name
    lines = [f"{name}: python exit {report.reference.returncode}"]
    if report.unstable:
        lines.append(f"  NOT DETERMINISTIC under plain python: {report.unstable}")
    for mode, runs, ok, _bad, note in summarize(report):
        lines.append(f"  {mode:12} {ok}/{runs} match" + (f"  -- {note}" if note else ""))
    for run in report.mismatches:
        lines.append(f"--- {name} [{run.mode} #{run.index + 1}] differs from plain python:")
        lines.append(run.difference or "")
    return "\n".join(lines)


def parse_modes(text: str) -> list[str]:
    """``"builtin,none"`` -> ``["builtin", "none"]``, refusing unknown modes (for argparse ``type=``)."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise argparse.ArgumentTypeError(f"unknown mode(s) {unknown or text!r}; known: {', '.join(MODES)}")
    return modes


def corpus() -> list[Path]:
    return sorted(SCRIPTS.glob("*.py"))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Run scripts plainly and under `dynaprof run`; compare status and stdout.")
    p.add_argument("scripts", nargs="*", type=Path, help="scripts to check (default: tests/differential/scripts/*.py)")
    p.add_argument("--repeat", type=int, default=1, help="runs per mode (and plain runs), default 1")
    p.add_argument("--modes", type=parse_modes, default=list(DEFAULT_MODES), help="comma-separated, default: all")
    args = p.parse_args(argv)
    skips = {m: skip_reason(m) for m in args.modes}
    for mode, why in skips.items():
        if why is not None:
            print(f"skipping {mode} runs: {why}")
    failed = False
    for script in args.scripts or corpus():
        report = check_script(script, args.modes, args.repeat, skips=skips)
        print(format_report(report), flush=True)
        failed = failed or bool(report.mismatches) or report.unstable is not None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
