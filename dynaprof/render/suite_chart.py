"""A suite's picture (``causes.svg``): one horizontal bar per model, its median compile time split
by kind of cause (``model.suite.CAUSE_KINDS``), slowest first; the part no sample explains is left
grey. Static, no script, labels through ``xml_text`` like the other SVG writers."""

from __future__ import annotations

from collections.abc import Sequence

from dynaprof import fmt
from dynaprof.analysis.suite_facts import ModelSummary
from dynaprof.model.suite import CAUSE_KINDS
from dynaprof.render.flamegraph_svg import xml_attr, xml_text

WIDTH = 880
_LEFT, _RIGHT, _TOP, _ROW, _BAR = 190, 64, 40, 22, 15  # right: room for the time after the bar
#: the most models drawn (the slowest); the rest are counted under the bars
MAX_BARS = 60
#: one colour per kind (colour-blind-safe palette), grey for the unsampled rest
KIND_COLOURS = {
    "parametrization": "#d55e00", "graph_breaks": "#e69f00", "recompiles": "#cc79a7", "restart_waste": "#c0392b",
    "toolchain": "#56b4e9", "collector": "#8c564b", "user_code": "#0072b2", "unattributed": "#009e73",
}
UNSAMPLED = "#c8c8c8"


def _legend_rows(kinds: set[str], unsampled: bool) -> list[list[tuple[int, str, str]]]:
    """The legend's (x, kind, label) items for the kinds drawn, wrapped to the picture's width."""
    rows: list[list[tuple[int, str, str]]] = [[]]
    x = 10
    items = [(k, label) for k, label in CAUSE_KINDS.items() if k in kinds]
    items += [("", "not sampled")] if unsampled else []
    for kind, label in items:
        width = 14 + 7 * len(label) + 16
        if x + width > WIDTH and rows[-1]:
            rows.append([])
            x = 10
        rows[-1].append((x, kind, label))
        x += width
    return rows


def suite_svg(models: Sequence[ModelSummary]) -> str:
    shown = [m for m in models if m.median_s is not None][:MAX_BARS]
    longest = max((m.median_s or 0.0 for m in shown), default=0.0)
    drawn = {k for m in shown for k, v in m.kinds.items() if v > 0}
    unsampled = any((m.median_s or 0.0) - sum(m.kinds.values()) > 1e-3 for m in shown)
    legend = _legend_rows(drawn, unsampled) if shown else []
    hidden = sum(1 for m in models if m.median_s is not None) - len(shown)
    height = _TOP + _ROW * max(len(shown), 1) + 18 * len(legend) + 8 + (16 if hidden > 0 else 0)
    plot = WIDTH - _LEFT - _RIGHT
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
           '<text x="10" y="22" font-size="14" font-weight="bold">Compile time per model, by kind of cause '
           '(median run)</text>']
    if not shown:
        out.append(f'<text x="10" y="{_TOP + 14}">no model has a finished run</text></svg>')
        return "\n".join(out)
    scale = plot / longest if longest > 0 else 0.0
    for i, m in enumerate(shown):
        y = _TOP + i * _ROW
        out.append(f'<text x="{_LEFT - 8}" y="{y + 12}" text-anchor="end">{xml_text(fmt.one_line(m.name, 28))}</text>')
        x = float(_LEFT)
        total = m.median_s or 0.0
        for kind in CAUSE_KINDS:
            w = min(m.kinds.get(kind, 0.0), total) * scale
            if w <= 0:
                continue
            title = f"{m.name}: {CAUSE_KINDS[kind]} {fmt.seconds(m.kinds[kind])}"
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{_BAR}" fill="{KIND_COLOURS[kind]}">'
                       f'<title>{xml_text(title)}</title></rect>')
            x += w
        rest = _LEFT + total * scale - x
        if rest > 0.5:
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{rest:.1f}" height="{_BAR}" fill="{UNSAMPLED}">'
                       f'<title>{xml_text(m.name + ": not sampled")}</title></rect>')
        out.append(f'<text x="{_LEFT + total * scale + 4:.1f}" y="{y + 12}" font-size="11">'
                   f'{xml_text(fmt.seconds(total))}</text>')
    y = _TOP + len(shown) * _ROW + 16
    for row in legend:
        for x, kind, label in row:
            colour = KIND_COLOURS.get(kind, UNSAMPLED)
            out.append(f'<rect x="{x}" y="{y - 10}" width="10" height="10" fill="{xml_attr(colour)}"/>'
                       f'<text x="{x + 14}" y="{y}" font-size="11">{xml_text(label)}</text>')
        y += 18
    if hidden > 0:
        out.append(f'<text x="10" y="{y + 2}" font-size="11">and {hidden} faster models not drawn</text>')
    out.append("</svg>")
    return "\n".join(out)
