"""Call graphs seen from render: our own deterministic DOT, turned into SVG by Graphviz's ``dot``.

Nodes are filled by heat (inclusive time, near-white to near-black: no category uses grey) and
outlined by attribution category in the flamegraph's colour for it; the nodes where
parametrization property tracing happens get a thick magenta outline and the path leading to them
magenta edges. Every label is quoted
and escaped (user names may hold quotes, backslashes, newlines, ``<>&{}|``); node ids are ``n0``,
``n1``, ... in sorted order, so the same profile always gives the same bytes.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import threading
from collections.abc import Callable

import networkx as nx

from dynaprof import fmt
from dynaprof.analysis import how_made
from dynaprof.analysis.attribution import PARAMETRIZATION_COLOUR
from dynaprof.analysis.callgraph import CallGraph, build_callgraph
from dynaprof.analysis.stacks import COLOUR_ORDER
from dynaprof.model.session import CATEGORY_LABELS
from dynaprof.render.base import Files, RenderContext
from dynaprof.render.colours import CATEGORY_OUTLINE, heat_colour
from dynaprof.render.output_names import CALLGRAPH_DOT, CALLGRAPH_SVG
from dynaprof.render.snakeviz import render_snakeviz_profile as render_snakeviz_profile  # its old home

PARAM_COLOR = CATEGORY_OUTLINE["parametrization"]
DOT_TIMEOUT_S = 60.0
INSTALL_HINT = "install Graphviz (`apt-get install graphviz`, or `brew install graphviz`)"

_FONT = "Helvetica"


# --- colours ---------------------------------------------------------------------------------------
# Fill: heat on inclusive time, in greys (``colours.heat_colour``), a scale no attribution category
# or phase uses; outline: the category, in the flamegraph's colour for it (``colours.CATEGORY_OUTLINE``).


def heat_color(weight: float) -> str:
    """``#rrggbb`` for a weight in [0, 1]: 0 near-white, 1 near-black."""
    return heat_colour(weight)


def text_color(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (``#rrggbb``)."""
    r, g, b = (int(fill[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.4 else "#ffffff"


# --- DOT text -------------------------------------------------------------------------------------


def dot_escape(text: str) -> str:
    """Escape one line of text for a quoted DOT string: backslashes and quotes are escaped, ``&``
    becomes ``&amp;`` (Graphviz decodes HTML entities in labels), a newline shows as ``\\n`` and
    other control characters as spaces; lone surrogates become ``?``."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "&":
            out.append("&amp;")
        elif ch == "\n":
            out.append("\\\\n")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def dot_string(*lines: str) -> str:
    """A quoted DOT string; each argument is one (centred) line."""
    return '"' + "\\n".join(dot_escape(line) for line in lines) + '"'


class _Raw(str):
    """A value already in DOT syntax (a multi-line quoted label)."""


def _attrs(**kw: str | float | int) -> str:
    """``[k=v, ...]`` sorted by key; strings are quoted and escaped unless ``_Raw``."""
    parts = []
    for k in sorted(kw):
        v = kw[k]
        if isinstance(v, _Raw):
            parts.append(f"{k}={v}")
        elif isinstance(v, str):
            parts.append(f"{k}={dot_string(v)}")
        elif isinstance(v, float):
            parts.append(f"{k}={v:.3f}")
        else:
            parts.append(f"{k}={v}")
    return "[" + ", ".join(parts) + "]"


def _stmt(indent: str, target: str, **kw: str | float | int) -> str:
    return f"{indent}{target} {_attrs(**kw)};"


def _pct(part: float, total: float) -> str:
    return f"{100.0 * part / total:.2f}%" if total > 0 else "?"


def _calls(calls: int | None, prim: int | None) -> str:
    if calls is None:
        return ""
    unit = "call" if calls == 1 else "calls"
    return f"{calls} {unit}" if prim in (None, calls) else f"{calls}/{prim} {unit}"


def node_ids(g: nx.DiGraph) -> dict[str, str]:
    return {n: f"n{i}" for i, n in enumerate(sorted(g))}


def callgraph_dot(cg: CallGraph, title: str = "dynaprof call graph") -> str:
    """The DOT text of a (pruned) call graph, with a legend and a summary label."""
    g, total = cg.graph, cg.total_s
    ids = node_ids(g)
    source = "cProfile (exact counts)" if cg.source == "cprofile" else "sampled stacks (no call counts)"
    summary = (
        f"showing {g.number_of_nodes()} of {cg.nodes_total} nodes, {g.number_of_edges()} of "
        f"{cg.edges_total} edges; thresholds {cg.node_threshold * 100:g}%/{cg.edge_threshold * 100:g}%"
        + (f"; capped at the {g.graph['node_cap']} heaviest nodes" if g.graph.get("node_cap") else "")
    )
    lines = [
        "digraph callgraph {",
        _stmt(
            "  ",
            "graph",
            label=_Raw(dot_string(title, f"{source}, total {fmt.duration(total, 'dot')}", summary)),
            labelloc="t",
            fontname=_FONT,
            fontsize=12,
            ranksep=0.25,
            nodesep=0.2,
        ),
        _stmt("  ", "node", shape="box", style="filled", fontname=_FONT, fontsize=10, fontcolor="#ffffff"),
        _stmt("  ", "edge", fontname=_FONT, fontsize=9, arrowsize=0.6),
    ]
    for n in sorted(g):
        d = g.nodes[n]
        where = d["location"] + (f":{d['lineno']}" if d["lineno"] else "")
        inclusive = fmt.duration(d["inclusive_s"], "dot")
        amount = ", ".join(x for x in (inclusive, _calls(d["calls"], d["primitive_calls"])) if x)
        extra = [f"{d['members']} functions"] if d["members"] > 1 else []
        share = f"{_pct(d['inclusive_s'], total)} (self {_pct(d['self_s'], total)})"
        fill = heat_color(d["inclusive_s"] / total)
        lines.append(
            _stmt(
                "  ",
                f'"{ids[n]}"',
                label=_Raw(dot_string(d["name"], where, share, amount, *extra)),
                tooltip=f"{n}  [{_outline_label(d)}]",
                fillcolor=fill,
                fontcolor=text_color(fill),
                color=CATEGORY_OUTLINE.get(d["category"], "#bbbbbb"),
                penwidth=5.0 if d["parametrization"] else 3.0 if d["param_path"] else 2.0,
                style="filled,bold" if d["param_path"] else "filled",
            )
        )
    for u, v in sorted(g.edges):
        d = g.edges[u, v]
        w = d["seconds"] / total if total > 0 else 0.0
        label = _Raw(dot_string(*(x for x in (_calls(d["calls"], None), fmt.duration(d["seconds"], 'dot')) if x)))
        color = PARAM_COLOR if d["param_path"] else heat_color(0.4 + 0.6 * w)  # light edges would vanish
        lines.append(
            _stmt(
                "  ",
                f'"{ids[u]}" -> "{ids[v]}"',
                label=label,
                color=color,
                fontcolor=color,
                penwidth=max(w * 4.0, 3.0 if d["param_path"] else 0.5),
            )
        )
    lines.extend(_legend(g))
    lines.append("}")
    return "\n".join(lines) + "\n"


#: the outline of a node where parametrization property tracing happens (a cause, drawn over the phase)
PARAM_OUTLINE_LABEL = "parametrization property tracing"


def _outline_label(d: dict[str, object]) -> str:
    c = str(d["category"])
    return CATEGORY_LABELS.get(c, PARAM_OUTLINE_LABEL if c == PARAMETRIZATION_COLOUR else c)


def _legend(g: nx.DiGraph) -> list[str]:
    present = [c for c in COLOUR_ORDER if any(g.nodes[n]["category"] == c for n in g)]
    out = [
        '  subgraph "cluster_legend" {',
        _stmt("    ", "graph", label="legend", style="rounded", color="#999999", fontsize=10),
        _stmt("    ", "node", fontsize=9, width=0.1, height=0.1),
    ]
    heat = [f"legend_heat{i}" for i in range(5)]
    for i, name in enumerate(heat):
        w = i / 4
        text = "fill: inclusive time " if i == 0 else ""
        out.append(
            _stmt(
                "    ",
                f'"{name}"',
                label=f"{text}{w * 100:.0f}%",
                fillcolor=heat_color(w),
                fontcolor=text_color(heat_color(w)),
                color=heat_color(w),
            )
        )
    out.append("    { rank=same; " + " ".join(f'"{h}";' for h in heat) + " }")
    out.extend(f'    "{a}" -> "{b}" [style=invis];' for a, b in itertools.pairwise(heat))
    names = [heat[0]]
    for c in present:
        names.append(f"legend_{c}")
        out.append(
            _stmt(
                "    ",
                f'"{names[-1]}"',
                label=f"outline: {CATEGORY_LABELS.get(c, PARAM_OUTLINE_LABEL)}",
                fillcolor="#ffffff",
                fontcolor="#000000",
                color=CATEGORY_OUTLINE[c],
                penwidth=5.0 if c == "parametrization" else 2.0,
            )
        )
    if any(g.nodes[n]["param_path"] for n in g):
        names.append("legend_param_path")
        out.append(
            _stmt(
                "    ",
                '"legend_param_path"',
                shape="plaintext",
                style="",
                fontcolor=PARAM_COLOR,
                label="magenta edges: path to parametrization tracing",
            )
        )
    out.extend(f'    "{a}" -> "{b}" [style=invis];' for a, b in itertools.pairwise(names))
    out.append("  }")
    return out


# --- SVG --------------------------------------------------------------------------------------------


def find_dot() -> str | None:
    return shutil.which("dot")


def dot_to_svg(dot_text: str, timeout: float = DOT_TIMEOUT_S) -> tuple[str | None, str | None]:
    """Run ``dot -Tsvg``; (svg, None) or (None, why it failed)."""
    exe = find_dot()
    if exe is None:
        return None, f"Graphviz `dot` was not found on PATH; {INSTALL_HINT}"
    try:
        proc = subprocess.run(
            [exe, "-Tsvg"], input=dot_text.encode("utf-8"), capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None, f"`dot -Tsvg` took longer than {timeout:.0f} s; raise the thresholds (fewer nodes)"
    except OSError as e:
        return None, f"cannot run {exe}: {e.strerror or e}"
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"`dot -Tsvg` failed (exit {proc.returncode}): {err[0] if err else 'no message'}"
    return proc.stdout.decode("utf-8", "replace"), None


def _note(ctx: RenderContext, text: str) -> None:
    if text not in ctx.notes:
        ctx.notes.append(text)


def callgraph_for(ctx: RenderContext, key: str = "run") -> CallGraph | None:
    """The pruned call graph of the run (``key="run"``) or of one frame key: from cProfile data
    when the context has it, else from samples."""
    frame = None if key == "run" else key
    o = ctx.options
    return build_callgraph(
        ctx.session,
        ctx.cprofile.get(key),
        frame,
        o.node_threshold,
        o.edge_threshold,
        o.collapse_torch,
        o.max_graph_nodes,
        ctx.derived,
    )


def callgraph_dot_for(ctx: RenderContext, key: str = "run") -> str | None:
    cg = callgraph_for(ctx, key)
    if cg is None:
        return None
    where = "run" if key == "run" else f"frame {key}"
    return callgraph_dot(cg, f"dynaprof call graph: {how_made.script_path(ctx.session.run)} ({where})")


def callgraph_svg_for(ctx: RenderContext, key: str = "run", inline: bool = True) -> str | None:
    """SVG text of the call graph for the HTML report (``inline``: without the XML prolog, ready to
    embed); None when there is no data or no ``dot`` (a note then says why)."""
    dot_text = callgraph_dot_for(ctx, key)
    if dot_text is None or not ctx.use_dot:
        return None
    svg, why = dot_to_svg(dot_text)
    if svg is None:
        _note(ctx, f"call graph SVG not made: {why}")
        return None
    return svg[svg.find("<svg") :] if inline and "<svg" in svg else svg


def render_callgraph(ctx: RenderContext) -> Files:
    """``callgraph.dot`` and ``callgraph.svg`` for the run (cProfile "run" table, else samples)."""
    return start_callgraph(ctx)()


def start_callgraph(ctx: RenderContext) -> Callable[[], Files]:
    """Begin :func:`render_callgraph`: the DOT text is made now and Graphviz runs in the
    background (it takes most of a second on a few hundred nodes); the function returned waits
    for it and gives the files, so the caller can render other outputs meanwhile."""
    if "callgraph" in ctx.memo:
        done: Files = ctx.memo["callgraph"]
        return lambda: dict(done)
    dot_text = callgraph_dot_for(ctx, "run")
    files: Files = {} if dot_text is None else {CALLGRAPH_DOT: dot_text}
    if dot_text is None or not ctx.use_dot:
        ctx.memo["callgraph"] = files
        return lambda: dict(files)
    result: list[tuple[str | None, str | None]] = []
    failed: list[BaseException] = []

    def run_dot() -> None:
        try:
            result.append(dot_to_svg(dot_text))
        except BaseException as e:  # raised where the caller waits, as if run there
            failed.append(e)

    thread = threading.Thread(target=run_dot, name="dynaprof-dot", daemon=True)
    thread.start()

    def finish() -> Files:
        if "callgraph" not in ctx.memo:
            thread.join()
            if failed:
                raise failed[0]
            svg, why = result[0]
            if svg is None:
                _note(
                    ctx,
                    f"callgraph.svg not made ({why}); callgraph.dot was written: "
                    "render it with `dot -Tsvg callgraph.dot -o callgraph.svg`",
                )
            else:
                files[CALLGRAPH_SVG] = svg
            ctx.memo["callgraph"] = files
        return dict(ctx.memo["callgraph"])

    return finish
