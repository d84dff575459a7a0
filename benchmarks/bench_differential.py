"""Differential check on real libraries: each script in ``benchmarks/differential/`` run as
``python script.py`` and under ``dynaprof run`` in each mode, repeated; exit status and stdout
(timings masked) compared. Prints a Markdown table (docs/reliability.md keeps the figures).

The scripts build models from small configs (random weights, nothing downloaded): a tiny Mixtral
with a peft LoRA on ``target_parameters``, classic peft LoRA on a tiny Llama, torchao
``quantize_`` + ``unwrap_tensor_subclass``, a tiny Wav2Vec2, and two models compiled in one
process. A script whose library is missing, or that fails under plain Python, gets a row saying
so. py-spy runs are skipped with the reason where py-spy cannot attach.

    .venv/bin/python benchmarks/bench_differential.py --repeat 3
    .venv/bin/python benchmarks/bench_differential.py --repeat 3 --legacy-walker   # the old walker
    .venv/bin/python benchmarks/bench_differential.py --scripts two_models --modes builtin,none
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.capture import stacks  # noqa: E402
from tests.differential import harness  # noqa: E402

SCRIPTS_DIR = Path(__file__).resolve().parent / "differential"
#: the libraries each script needs (a missing one is reported, not an error)
NEEDS: dict[str, tuple[str, ...]] = {
    "mixtral_lora_target_parameters": ("transformers", "peft"),
    "lora_classic": ("transformers", "peft"),
    "torchao_quantize": ("torchao",),
    "wav2vec2_tiny": ("transformers",),
    "two_models": ("transformers",),
}
LIBRARIES = ("torch", "transformers", "peft", "torchao")

Row = tuple[str, str, str, str, str, str]


def scripts() -> list[str]:
    return sorted(p.stem for p in SCRIPTS_DIR.glob("*.py") if not p.name.startswith("_"))


def _cell(text: str) -> str:
    text = " ".join(text.split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")[:220]


def _missing(name: str) -> str | None:
    gone = [lib for lib in NEEDS.get(name, ()) if importlib.util.find_spec(lib) is None]
    return f"not installed: {', '.join(gone)}" if gone else None


def _version(lib: str) -> str:
    try:
        return importlib.metadata.version(lib)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def bench(names: list[str], modes: list[str], repeat: int, env: dict[str, str], timeout: float) -> list[Row]:
    skips = {m: harness.skip_reason(m) for m in modes}
    rows: list[Row] = []
    for name in names:
        missing = _missing(name)
        if missing is not None:
            rows.append((name, "all", "0", "0", "0", f"not run: {missing}"))
            continue
        report = harness.check_script(SCRIPTS_DIR / f"{name}.py", modes, repeat, env=env, timeout=timeout, skips=skips)
        print(harness.format_report(report), file=sys.stderr, flush=True)
        ref = report.reference
        if ref.returncode != 0:
            last = (ref.stderr.strip().splitlines() or ["no output"])[-1]
            rows.append(
                (
                    name,
                    "python",
                    str(repeat),
                    "-",
                    "-",
                    f"the model could not be built/run: exit {ref.returncode}: {last}",
                )
            )
            continue
        if report.unstable is not None:
            line = report.unstable.splitlines()
            rows.append(
                (name, "python", str(repeat), "-", "-", f"not deterministic under python: {' '.join(line[:4])}")
            )
        for mode, runs, ok, bad, note in harness.summarize(report):
            rows.append((name, mode, str(runs), str(ok), str(bad), note))
    return rows


def table(rows: list[Row]) -> str:
    out = ["| script | mode | runs | matches | mismatches | first differing line / note |", "|---|---|---|---|---|---|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--repeat", type=int, default=3, help="runs per mode, and plain runs (default 3)")
    p.add_argument("--modes", type=harness.parse_modes, default=list(harness.DEFAULT_MODES), help="comma-separated")
    p.add_argument("--scripts", default="", help=f"comma-separated, default all: {','.join(scripts())}")
    p.add_argument("--legacy-walker", action="store_true", help="run dynaprof with the old frame-retaining walker")
    p.add_argument("--timeout", type=float, default=1800,
                   help="seconds per run (builtin-20k on the Mixtral script takes ~12 min on 2 cores)")
    args = p.parse_args()
    names = [s.strip() for s in args.scripts.split(",") if s.strip()] or scripts()
    unknown = sorted(set(names) - set(scripts()))
    if unknown:
        p.error(f"unknown script(s): {', '.join(unknown)}")
    env: dict[str, str] = {}
    legacy_env = getattr(stacks, "LEGACY_WALKER_ENV", None)
    if args.legacy_walker:
        if legacy_env is None:
            p.error("this dynaprof has no legacy-walker switch (dynaprof.capture.stacks.LEGACY_WALKER_ENV)")
        env[legacy_env] = "1"
    elif legacy_env is not None and os.environ.get(legacy_env):
        p.error(f"{legacy_env} is set in the environment; use --legacy-walker to ask for the old walker")
    walker = "legacy (frame-retaining)" if args.legacy_walker else "default"
    if legacy_env is None:
        walker = "default (no legacy switch: this is the frame-retaining walker)"
    rows = bench(names, args.modes, args.repeat, env, args.timeout)
    versions = ", ".join(f"{lib} {_version(lib)}" for lib in LIBRARIES)
    print(
        f"Walker: {walker}; {args.repeat} run(s) per mode; {versions}; Python {sys.version.split()[0]}; "
        f"{datetime.date.today().isoformat()}\n"
    )
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
