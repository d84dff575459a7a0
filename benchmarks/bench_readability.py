"""Can the pictures and the terminal summary be read at a glance, on models we did not write?

Each case runs in a fresh process under ``dynaprof run`` (COLUMNS=80, stderr not a terminal), then
the run folder is measured:

* compiler flamegraph: levels before folding (the raw stacks) and as drawn; time hidden by
  pruning, unfolded (the first version's drawing) and as drawn; frames drawn; labels cut to fit;
  SVG height;
* call graph: nodes drawn (default cap 40) and in the full graph;
* terminal: the widest line dynaprof printed (target: at most 100 columns at COLUMNS=80, paths
  aside) and how many files the "wrote" line names;
* the verdict, as the summary gives it.

    .venv/bin/python benchmarks/bench_readability.py                 # every case (~2 min)
    .venv/bin/python benchmarks/bench_readability.py --cases seed hifigan --out docs/readability-figures.md

Models are built from small configs (no downloads): transformers (HiFi-GAN with weight norm,
Wav2Vec2, Llama with peft LoRA, Mixtral with peft target_parameters). timm is left out: it imports
torchvision, whose PyPI build does not load with CPU torch.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.analysis.callgraph import build_callgraph  # noqa: E402
from dynaprof.analysis.derived import Derived  # noqa: E402
from dynaprof.analysis.findings import hottest  # noqa: E402
from dynaprof.analysis.pruned_tree import build_pruned_tree  # noqa: E402
from dynaprof.analysis.stacks import build_tree  # noqa: E402
from dynaprof.model import load_session  # noqa: E402
from dynaprof.render.base import RenderOptions  # noqa: E402

SAMPLES = ROOT / "samples"
DIFF = ROOT / "benchmarks" / "differential"
HERE = ROOT / "benchmarks" / "readability"

CASES: dict[str, tuple[str, list[str]]] = {
    "seed": ("seed, parametrized (eager)", [str(SAMPLES / "parametrized_linear.py"), "--parametrize"]),
    "seed-plain": ("seed, plain (eager)", [str(SAMPLES / "parametrized_linear.py"), "--no-parametrize"]),
    "restarts": ("restart sample", [str(SAMPLES / "restart_analysis.py")]),
    "breaks": ("graph breaks + recompiles sample", [str(SAMPLES / "graph_breaks_recompiles.py")]),
    "hifigan": ("transformers HiFi-GAN + weight_norm", [str(HERE / "hifigan.py")]),
    "wav2vec2": ("transformers Wav2Vec2 (train + eval)", [str(DIFF / "wav2vec2_tiny.py")]),
    "peft": ("peft LoRA on Llama (aot_eager, train)", [str(DIFF / "lora_classic.py")]),
    "mixtral": ("peft target_parameters on Mixtral", [str(DIFF / "mixtral_lora_target_parameters.py")]),
}
SVG = "{http://www.w3.org/2000/svg}"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _svg_facts(path: Path) -> tuple[int, int, int, int]:
    """(height px, frames drawn, labels cut, labels shown) of a flamegraph SVG."""
    root = ET.parse(path).getroot()
    frames = cut = shown = 0
    for g in root.iter(f"{SVG}g"):
        if g.find(f"{SVG}rect") is None or g.find(f"{SVG}title") is None:
            continue
        frames += 1
        text = g.find(f"{SVG}text")
        if text is not None and (text.text or "").strip():
            shown += 1
            cut += (text.text or "").endswith("..")
    return int(float(root.get("height", "0"))), frames, cut, shown


def _terminal(stderr: str, script_lines: set[str]) -> tuple[int, int]:
    """(widest dynaprof line, files named on the 'wrote' line); the script's own output and
    torch's log lines are not dynaprof's."""
    widest, wrote, longest = 0, 0, ""
    for line in stderr.splitlines():
        line = ANSI.sub("", line)
        if line in script_lines or re.match(r"^[WIE]\d{4} |^Failed to load|^\s*warnings\.warn", line):
            continue
        if line.startswith("dynaprof: wrote "):
            wrote = line.count(",") + 1
        # paths aside (the target's words): a path token counts as one column
        width = len(line) - sum(len(tok) - 1 for tok in line.split() if "/" in tok)
        if width > widest:
            widest, longest = width, line
    if widest > 100:
        print(f"    widest line: {longest!r}", file=sys.stderr)
    return widest, wrote


def measure(name: str, label: str, argv: list[str], work: Path) -> dict[str, object]:
    out = work / name
    env = dict(os.environ, COLUMNS="80", DYNAPROF_PROGRESS="0")
    plain = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=900)
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "dynaprof"), "run", "-o", str(out), "--force", *argv],
                         capture_output=True, text=True, env=env, timeout=900)
    if run.returncode != plain.returncode:
        raise SystemExit(f"{name}: exit {run.returncode} under dynaprof, {plain.returncode} as python:\n"
                         f"{run.stderr[-2000:]}")
    s = load_session(out)
    d = Derived(s)
    opts = RenderOptions()
    raw = build_tree(s, "compiler", derived=d)
    _, _, hid_raw = build_pruned_tree(s, "compiler", None, opts.min_width, derived=d)
    drawn, _, _ = build_pruned_tree(s, "compiler", None, opts.min_width, derived=d, user_calls=True, gather=True)
    svg = out / "flame-compiler.svg"
    height, frames, cut, shown = _svg_facts(svg)
    said = re.search(r"pruned \([^)]*?([\d.]+)% of the total\)", svg.read_text(encoding="utf-8"))
    hid = float(said.group(1)) / 100 if said else 0.0  # what the graph's subtitle says it hides
    cg = build_callgraph(s, None, max_nodes=opts.max_graph_nodes, derived=d)
    widest, wrote = _terminal(run.stderr, set(plain.stdout.splitlines()) | set(plain.stderr.splitlines()))
    total = raw.seconds or 1.0
    hid *= total
    return {
        "case": label, "compile_s": s.total_compile_s, "levels_raw": raw.depth() + 1,
        "levels": drawn.depth() + 1, "hidden_raw": hid_raw / total, "hidden": hid / total,
        "frames": frames, "cut": cut, "shown": shown, "height": height,
        "cg_nodes": cg.graph.number_of_nodes() if cg else 0, "cg_full": cg.nodes_total if cg else 0,
        "widest": widest, "wrote": wrote, "verdict": hottest(s),
    }


def table(rows: list[dict[str, object]]) -> str:
    head = ("| case | compile | levels raw → drawn | hidden by pruning, raw → drawn | frames drawn | "
            "labels cut | SVG height | call graph nodes (of) | widest terminal line (paths aside) | files on 'wrote' |")
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['compile_s']:.2f} s | {r['levels_raw']} → {r['levels']} | "
            f"{100 * float(r['hidden_raw']):.1f}% → {100 * float(r['hidden']):.1f}% | {r['frames']:,} | "  # type: ignore[str-format]
            f"{r['cut']} of {r['shown']} | {r['height']:,} px | {r['cg_nodes']} ({r['cg_full']}) | "  # type: ignore[str-format]
            f"{r['widest']} | {r['wrote']} |")
    lines.append("")
    lines.append("Verdicts:")
    lines.append("")
    lines += [f"- **{r['case']}**: {r['verdict']}" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    ap.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="dynaprof-read-") as tmp:
        for name in a.cases:
            label, argv = CASES[name]
            print(f"... {label}", file=sys.stderr, flush=True)
            rows.append(measure(name, label, argv, Path(tmp)))
    text = table(rows)
    print(text)
    if a.out:
        a.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
