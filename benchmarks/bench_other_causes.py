"""How much of the compile does the first screen's cause table explain? The share left in "other
causes" (and explained by the rows shown) with the terminal's 8 rows, on real models whose compile
has a long tail of small causes: peft LoRA with ``target_parameters`` on a small Mixtral, EnCodec and
HiFi-GAN, eager and Inductor. Issue "one root cause, one finding": under 15% everywhere.

    .venv/bin/python benchmarks/bench_other_causes.py                 # runs the six (~8 min, 2 cores)
    .venv/bin/python benchmarks/bench_other_causes.py --sessions DIR  # re-reads DIR/NAME/session.json

Each run is ``dynaprof run`` with a fresh Inductor cache; the table is re-derived from the saved
session by today's rules, so ``--sessions`` shows what a change of the roll-up does to the same runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.analysis.cause_table import OTHER_CAUSES, session_cause_table  # noqa: E402
from dynaprof.model import load_session  # noqa: E402

B = ROOT / "benchmarks"
#: name -> script and its arguments
RUNS: dict[str, list[str]] = {
    f"{model}-{backend}": [str(script), backend]
    for model, script in (("peft", B / "differential/mixtral_lora_target_parameters.py"),
                          ("encodec", B / "readability/encodec.py"), ("hifigan", B / "readability/hifigan.py"))
    for backend in ("eager", "inductor")
}
#: the terminal's rows of causes (``render.terminal``)
TERMINAL_ROWS = 8


def run(name: str, out: Path) -> None:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(out / f"cache-{name}")}
    print(f"running {name} ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "dynaprof", "run", "-o", str(out / name), *RUNS[name]], env=env,
                   cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=Path, help="a folder of earlier runs (NAME/session.json): run nothing")
    ap.add_argument("--only", nargs="*", default=list(RUNS), choices=list(RUNS))
    args = ap.parse_args()
    out = args.sessions or Path(tempfile.mkdtemp(prefix="dynaprof-other-causes-"))
    print("| run | compile | causes | rows shown | explained by the rows | other causes |")
    print("|---|---|---|---|---|---|")
    for name in args.only:
        if args.sessions is None:
            run(name, out)
        path = out / name / "session.json"
        if not path.exists():
            print(f"| {name} | run failed or missing ({path}) | | | | |")
            continue
        s = load_session(path)
        t = session_cause_table(s, TERMINAL_ROWS)
        if t is None:
            print(f"| {name} | {s.total_compile_s:.1f} s | no samples | | | |")
            continue
        other = sum(r.total for r in t.rows if r.cause == OTHER_CAUSES)
        shown = [r for r in t.rows if r.cause != OTHER_CAUSES]
        print(f"| {name} | {s.total_compile_s:.1f} s | {t.totals.merged} | {len(shown)} "
              f"({sum(1 for r in shown if r.members)} rolled up) | {t.share(sum(r.total for r in shown)):.0%} "
              f"| {t.share(other):.0%} |")
    print(f"\nsessions: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
