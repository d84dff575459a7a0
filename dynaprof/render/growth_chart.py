"""The growth chart of a sweep (``growth.svg``): compile time against size on log-log axes, one
straight line per fit drawn (``Growth.drawn``: the total and every cause, phase group and restart
waste above ``MATTERS`` of compile at some point), each labelled with its exponent, and every run
as a dot.

A static picture meant to be read as an ``<img>`` (the way GitHub shows an attached SVG, and inline
in ``report.html``): no script, no external reference, the font a generic family. Hand-written
like the other SVG writers: every label from user code (cause names, the parameter's name) goes
through ``xml_text`` / ``xml_attr``.
"""

from __future__ import annotations

import math
import textwrap

from dynaprof import fmt
from dynaprof.analysis.growth import Fit, Growth, x_text
from dynaprof.model.sweep import GROUP_PREFIX, RESTART_WASTE, TOTAL
from dynaprof.render.colours import category_hex
from dynaprof.render.flamegraph_svg import xml_attr, xml_text

WIDTH = 880
HEIGHT = 460
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 290, 44, 46
_LABEL_GAP = 14
#: causes' lines, in the order they are drawn (colour-blind-safe, apart from the phase groups' colours)
_PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#8c564b", "#7f7f7f")


def _colour(fit: Fit, index: int) -> str:
    if fit.measure == TOTAL:
        return "#1d1d1d"
    if fit.measure == RESTART_WASTE:
        return "#c0392b"
    if fit.measure.startswith(GROUP_PREFIX):
        return category_hex(fit.measure[len(GROUP_PREFIX):])
    return _PALETTE[index % len(_PALETTE)]


def _dash(fit: Fit) -> str:
    """Phase groups dashed, so that a group and a cause of one colour stay apart."""
    return ' stroke-dasharray="6 3"' if fit.measure.startswith(GROUP_PREFIX) else ""


def _ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 steps between ``lo`` and ``hi`` (seconds, log axis), or decades when they are many."""
    out: list[float] = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        out += [m * 10.0 ** e for m in (1, 2, 5)]
    ticks = [t for t in out if lo <= t <= hi]
    return [t for t in ticks if math.log10(t) == round(math.log10(t))] if len(ticks) > 8 else ticks


def growth_svg(g: Growth) -> str:
    """The chart; a short picture saying so when nothing was measured."""
    fits = g.drawn()
    values = [v for f in fits for _, v in f.values]
    xs = list(g.xs)
    axis = xml_text(fmt.one_line(g.axis, 40))
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH}" height="{{h}}" '
            f'viewBox="0 0 {WIDTH} {{h}}" font-family="sans-serif" font-size="12">\n'
            f'<rect width="{WIDTH}" height="{{h}}" fill="#ffffff"/>\n')
    if len(xs) < 2 or not values:
        return (head.format(h=60) + f'<text x="12" y="34" fill="#1d1d1d">Growth with {axis}: fewer than two '
                "points ran to the end, nothing to draw</text>\n</svg>\n")
    lx0, lx1 = math.log10(xs[0]), math.log10(xs[-1])
    pad_x = (lx1 - lx0) * 0.04
    lx0, lx1 = lx0 - pad_x, lx1 + pad_x
    ly0, ly1 = math.log10(min(values)), math.log10(max(values))
    pad_y = max((ly1 - ly0) * 0.06, 0.05)
    ly0, ly1 = ly0 - pad_y, ly1 + pad_y
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + (math.log10(x) - lx0) / (lx1 - lx0) * plot_w

    def py(y: float) -> float:
        return _TOP + plot_h - (math.log10(y) - ly0) / (ly1 - ly0) * plot_h

    body: list[str] = [
        f'<text x="{_LEFT}" y="20" font-size="14" font-weight="bold" fill="#1d1d1d">Compile time against {axis} '
        "(log-log)</text>",
        f'<text x="{_LEFT}" y="36" fill="#666666">N = {axis}; lines: t = a·N^k fitted to each point\'s '
        "median; dots: every run; dashed: phase groups</text>",
        f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999999"/>',
    ]
    for t in _ticks(10 ** ly0, 10 ** ly1):
        y = py(t)
        body.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_w}" y2="{y:.1f}" stroke="#e4e4e4"/>'
                    f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#444444">'
                    f"{xml_text(fmt.seconds(t))}</text>")
    for x in xs:
        xp = px(x)
        body.append(f'<line x1="{xp:.1f}" y1="{_TOP}" x2="{xp:.1f}" y2="{_TOP + plot_h}" stroke="#e4e4e4"/>'
                    f'<text x="{xp:.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle" fill="#444444">'
                    f"{xml_text(x_text(x))}</text>")
    body.append(f'<text x="{_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle" fill="#1d1d1d">'
                f"{axis}</text>")
    labels: list[tuple[float, str, str]] = []  # (y, text, colour)
    cause_index = 0
    for f in fits:
        colour = _colour(f, cause_index)
        if not (f.measure in (TOTAL, RESTART_WASTE) or f.measure.startswith(GROUP_PREFIX)):
            cause_index += 1
        width = 2.5 if f.measure == TOTAL else 1.6
        name = " ".join(f.label.split())  # whole: a legend label wraps, never is cut
        for x, v in f.values:
            tip = f"{f.label}, {g.axis}={x_text(x)}: {fmt.seconds(v)}"
            body.append(f'<circle cx="{px(x):.1f}" cy="{py(v):.1f}" r="2.6" fill="{xml_attr(colour)}" '
                        f'fill-opacity="0.75"><title>{xml_text(tip)}</title></circle>')
        first, last = f.medians[0][0], f.medians[-1][0]
        a, b = f.at(first), f.at(last)
        if a is not None and b is not None and a > 0 and b > 0:
            body.append(f'<line x1="{px(first):.1f}" y1="{py(a):.1f}" x2="{px(last):.1f}" y2="{py(b):.1f}" '
                        f'stroke="{xml_attr(colour)}" stroke-width="{width}"{_dash(f)}>'
                        f"<title>{xml_text(f.label + ': ' + f.text(g.axis, 2))}</title></line>")
            labels.append((py(b), f"{name} {f.text('N')}", colour))
        else:  # no exponent (present at one point): its dots only
            labels.append((py(f.medians[-1][1]), f"{name} ({f.note or 'no fit'})", colour))
    body += _legend(labels, _LEFT + plot_w + 8)
    return head.format(h=HEIGHT) + "\n".join(body) + "\n</svg>\n"


def _legend(labels: list[tuple[float, str, str]], x_label: float) -> list[str]:
    """The labels at the lines' ends (y, text, colour), wrapped, pushed apart top to bottom, then
    back up if they ran off the bottom."""
    labels = sorted(labels)
    wrapped = [legend_lines(text) for _, text, _ in labels]
    placed: list[float] = []
    for i, (y, _, _) in enumerate(labels):
        placed.append(max(y, placed[-1] + _LABEL_GAP * len(wrapped[i - 1])) if placed else y)
    overflow = (placed[-1] + _LABEL_GAP * (len(wrapped[-1]) - 1) - (HEIGHT - 10)) if placed else 0
    if overflow > 0:
        placed = [p - overflow for p in placed]
        for i in range(len(placed) - 2, -1, -1):
            placed[i] = min(placed[i], placed[i + 1] - _LABEL_GAP * len(wrapped[i]))
    out = []
    for (_, _, colour), lines, y in zip(labels, wrapped, placed, strict=True):
        spans = "".join(f'<tspan x="{x_label}" dy="{0 if i == 0 else _LABEL_GAP}">{xml_text(line)}</tspan>'
                        for i, line in enumerate(lines))
        out.append(f'<text x="{x_label}" y="{y + 4:.1f}" fill="{xml_attr(colour)}">{spans}</text>')
    return out


#: characters of a legend line (the right margin, 290 px, at 12 px sans-serif)
LEGEND_CHARS = 40


def legend_lines(text: str) -> list[str]:
    """A legend label in lines that fit the margin: wrapped at spaces, a long word split across
    lines; every character kept."""
    return textwrap.wrap(text, LEGEND_CHARS, break_long_words=True, break_on_hyphens=False) or [""]
