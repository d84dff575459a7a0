"""The version table of docs/versions.md: for each torch venv, what dynaprof captures there, what is
unknown (the private names that torch lacks, the session's warnings), the seed's verdict, and the
test suite's result.

Each venv (``.venv``, torch 2.13.0, and every ``.venv-torch-VERSION`` that
``bash scripts/setup.sh --test --torch VERSION`` made) gets:

* the seed, ``samples/parametrized_linear.py`` on the eager backend, under ``dynaprof run``: the
  hooks installed, the warnings (what that torch cannot give), and the summary's ``hottest:`` line;
* ``scripts/torch_names.py``: the private names it lacks;
* with ``--suite versions`` / ``--suite full``, pytest in that venv (``-m versions`` or the whole
  default suite): its summary line and the seconds it took.

    .venv/bin/python benchmarks/bench_versions.py --suite versions > /tmp/versions.md
    .venv/bin/python benchmarks/bench_versions.py --venvs .venv-torch-2.4.1 --suite full
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: pytest's last line: "12 passed, 3 skipped in 80.1s"
_SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|skipped|errors?|deselected).*?) in [\d.]+s")


def venvs() -> list[Path]:
    """``.venv`` and every ``.venv-torch-*`` with a python."""
    found = [ROOT / ".venv", *sorted(ROOT.glob(".venv-torch-*"), key=lambda v: [int(x) for x in
                                                                           re.findall(r"\d+", v.name)])]
    return [v for v in found if (v / "bin" / "python").exists()]


def torch_of(venv: Path) -> str:
    out = subprocess.run([str(venv / "bin/python"), "-c", "import torch; print(torch.__version__)"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    return out.stdout.strip() or "?"


def seed(venv: Path, tmp: Path) -> dict[str, object]:
    """The seed under ``dynaprof run`` (eager): hooks, warnings, hottest line, compile time."""
    run_dir = tmp / f"seed-{venv.name}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200", DYNAPROF_PROGRESS="0")
    proc = subprocess.run(
        [str(venv / "bin/python"), "-m", "dynaprof", "run", "-o", str(run_dir), "--sampler", "builtin",
         str(ROOT / "samples" / "parametrized_linear.py"), "--backend", "eager"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp,
    )  # fmt: skip
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["?"]}
    session = json.loads((run_dir / "session.json").read_text())
    summary = (run_dir / "summary.txt").read_text()
    lines = summary.splitlines()
    at = next((i for i, line in enumerate(lines) if line.strip().startswith("hottest:")), None)
    hottest = ""
    if at is not None:  # the verdict and its wrapped lines, up to the next item ("also:", "try:", "note:")
        indent = len(lines[at]) - len(lines[at].lstrip())
        rest = lines[at + 1 :]
        more = [x.strip() for x in rest[: next((i for i, x in enumerate(rest)
                                                if len(x) - len(x.lstrip()) <= indent + 2), len(rest))]]  # fmt: skip
        hottest = " ".join([lines[at].strip(), *more])
    frame = session["frames"][0] if session["frames"] else {}
    return {
        "hooks": session["capture"]["hooks"],
        "warnings": [w for w in session["capture"]["warnings"] if w.startswith("torch ")],
        "hottest": hottest,
        "compile_s": frame.get("compile_time_s"),
        "guards": frame.get("guard_count"),
    }


def missing_names(venv: Path) -> list[str]:
    proc = subprocess.run([str(venv / "bin/python"), str(ROOT / "scripts" / "torch_names.py")],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    return [line for line in proc.stdout.splitlines() if line.startswith(("missing", "BROKEN"))]


def suite(venv: Path, which: str, tmp: Path) -> tuple[str, float]:
    """pytest in ``venv`` (made by ``scripts/setup.sh --test [--torch V]``; ruff and mypy are
    ``scripts/test.sh``'s): its summary line and the wall seconds."""
    cmd = [str(venv / "bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
           f"--basetemp={tmp / ('suite-' + venv.name)}"]  # fmt: skip
    if which == "versions":
        cmd += ["-m", "versions"]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, COLUMNS="80"))
    took = time.monotonic() - start
    lines = [m.group(1) for line in proc.stdout.splitlines() if (m := _SUMMARY.match(line.strip()))]
    return (lines[-1] if lines else f"exit {proc.returncode}, no pytest summary"), took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venvs", nargs="*", type=Path, help="venv folders (default: .venv and every .venv-torch-*)")
    ap.add_argument("--suite", choices=("none", "versions", "full"), default="none",
                    help="also run the suite on each venv: the versions subset, or the whole default suite")
    args = ap.parse_args()
    chosen = [v.resolve() for v in args.venvs] if args.venvs else venvs()
    with tempfile.TemporaryDirectory(prefix="bench-versions-") as d:
        tmp = Path(d)
        for venv in chosen:
            version = torch_of(venv)
            got = seed(venv, tmp)
            print(f"## torch {version} ({venv.name})\n")
            if "error" in got:
                print(f"* seed: dynaprof run failed: {got['error']}\n")
                continue
            print(f"* hooks installed ({len(got['hooks'])}): {', '.join(got['hooks'])}")  # type: ignore[arg-type]
            print(f"* seed (eager): {got['compile_s']} s compile, {got['guards']} guards; {got['hottest']}")
            print("* the session's warnings:")
            print("\n".join(f"  * {w}" for w in got["warnings"]) or "  * none")  # type: ignore[attr-defined]
            names = missing_names(venv)
            print(f"* private names missing ({len(names)}):")
            print("\n".join(f"  * `{n}`" for n in names) or "  * none")
            if args.suite != "none":
                line, took = suite(venv, args.suite, tmp)
                print(f"* suite ({args.suite}): {line}; {took:.0f} s")
            print()
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
