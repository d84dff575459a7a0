"""Flamegraph SVG text: escaping, colours and the document around laid-out frames.

The output is one self-contained SVG (inline CSS, the script from ``assets/flamegraph.js`` in a
CDATA section, no network). Every string that can come from user code goes through
:func:`xml_text` / :func:`xml_attr`; the script only reads numbers and element text, so names are
never code. Markup is compact: one ``<g>`` per frame holding ``<title>``, ``<rect>`` and ``<text>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

WIDTH = 1200
PAD = 10
FRAME_H = 16
FONT_PX = 11
#: frame labels use a monospace font, so this is the exact advance of one character
CHAR_W = 0.6 * FONT_PX
#: fill of frames matched by a search (set by the script; documented in docs/flamegraphs.md)
HIGHLIGHT = "rgb(40,210,120)"

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

_CSS = (
    ".dynaprof-flame text{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;fill:#1d1d1d}"
    ".dynaprof-flame .fg-t{font-size:17px;font-weight:bold}"
    ".dynaprof-flame .fg-s{font-size:12px;fill:#555}"
    ".dynaprof-flame .fg-h{font-size:12px;font-weight:bold;fill:#333}"
    ".dynaprof-flame .fg-l{font-size:12px;fill:#333}"
    ".dynaprof-flame .fg-e{font-size:14px;fill:#777}"
    ".dynaprof-flame .fg-c{font-size:12px;fill:#1a5fb4;cursor:pointer}"
    ".dynaprof-flame .fg-c:hover{text-decoration:underline}"
    ".dynaprof-flame .fg-details{font-size:12px;fill:#333}"
    ".dynaprof-flame .fg-matched{font-size:12px;fill:#333;font-weight:bold}"
    ".dynaprof-flame .fg-panel g{cursor:pointer}"
    ".dynaprof-flame .fg-panel text{font-family:'DejaVu Sans Mono',Menlo,Consolas,'Liberation Mono',monospace;"
    f"font-size:{FONT_PX}px;pointer-events:none}}"
    ".dynaprof-flame .fg-panel text.w{fill:#fff}"
    ".dynaprof-flame .fg-panel g:hover rect{stroke:#111;stroke-width:1}"
    ".dynaprof-flame .fg-p rect{opacity:.55}"
)


def sanitize(text: str) -> str:
    """Drop characters XML 1.0 cannot hold (control characters, lone surrogates)."""
    return _INVALID_XML.sub("\ufffd", text)


def xml_text(text: str) -> str:
    """Escape for element content (also defuses ``]]>``)."""
    return sanitize(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def xml_attr(text: str) -> str:
    """Escape for a double-quoted attribute value (newlines kept as character references)."""
    return xml_text(text).replace('"', "&quot;").replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")


#: a cut label keeps at least this many characters, or the frame shows none ("V.." names nothing)
MIN_KEPT = 4


def fit_label(label: str, width_px: float, char_w: float = CHAR_W) -> str:
    """``label`` whole if it fits ``width_px``, else cut with ``..`` when at least
    :data:`MIN_KEPT` characters of it remain, else empty (the tooltip names the frame)."""
    n = int((width_px - 6) / char_w + 1e-6)
    if len(label) <= n:
        return label if n >= 1 else ""
    return label[: n - 2] + ".." if n - 2 >= MIN_KEPT else ""


def fmt(v: float) -> str:
    """A coordinate with one decimal, without a trailing ``.0``."""
    s = f"{v:.1f}"
    return s[:-2] if s.endswith(".0") else s


def diff_colour(ratio: float) -> str:
    """Red for more time in NEW (ratio > 0), blue for less, near-white for no change; ``ratio``
    in [-1, 1] sets the intensity."""
    t = max(-1.0, min(1.0, ratio))
    if t == 0:
        return "#e8e8e8"
    a = 0.12 + 0.88 * abs(t)
    target = (214, 39, 40) if t > 0 else (31, 94, 214)
    base = (245, 245, 245)
    rgb = [round(b + (c - b) * a) for b, c in zip(base, target, strict=True)]
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def is_dark(colour: str) -> bool:
    """Whether white text reads better than black on ``#rrggbb``."""
    r, g, b = (int(colour[i : i + 2], 16) / 255.0 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.45


@cache
def script() -> str:
    js = resources.files("dynaprof.render").joinpath("assets/flamegraph.js").read_text(encoding="utf-8")
    if "]]>" in js:  # pragma: no cover - guards the asset itself
        raise ValueError("flamegraph.js must not contain ']]>'")
    return js


@dataclass
class Frame:
    """One drawn frame: geometry as fractions of the total and depth; text already final
    (``title`` lines: the first is the full label the script uses when re-fitting)."""

    x: float
    width: float
    depth: int
    title: str
    label: str
    fill: str
    #: an outline colour marking the frame (the diff graph's frames found in one run only)
    mark: str = ""


@dataclass
class Panel:
    frames: list[Frame] = field(default_factory=list)
    max_depth: int = -1
    heading: str = ""
    empty_message: str = ""
    #: the panel's width as a share of the full width (the diff graph's smaller run)
    scale: float = 1.0


def _clip(text: str, px: float, char_px: float) -> str:
    n = max(4, int(px // char_px))
    return text if len(text) <= n else text[: n - 2] + ".."


def _text(cls: str, x: float, y: float, content: str, anchor: str = "") -> str:
    a = f' text-anchor="{anchor}"' if anchor else ""
    return f'<text class="{cls}" x="{fmt(x)}" y="{fmt(y)}"{a}>{xml_text(content)}</text>'


def _panel(out: list[str], panel: Panel, top: float, icicle: bool, width: int = WIDTH) -> float:
    """Append one panel's markup; returns the y below it."""
    inner = width - 2 * PAD
    if panel.heading:
        top += 16
        out.append(_text("fg-h", PAD, top - 4, _clip(panel.heading, inner, 7.2)))
    out.append(f'<g class="fg-panel" data-dir="{1 if icicle else -1}">')
    if not panel.frames:
        out.append("</g>")
        msg = panel.empty_message or "nothing to show"
        out.append(f'<rect x="{PAD}" y="{fmt(top)}" width="{inner}" height="60" fill="#f2f2f2" stroke="#ddd"/>')
        out.append(
            f'<text class="fg-e" x="{width / 2:g}" y="{fmt(top + 35)}" text-anchor="middle">'
            f"{xml_text(_clip(msg, inner - 20, 7.8))}</text>"
        )
        return top + 60
    levels = panel.max_depth + 1
    for f in panel.frames:
        row = f.depth if icicle else panel.max_depth - f.depth
        x = PAD + f.x * inner * panel.scale
        w = f.width * inner * panel.scale
        y = top + row * FRAME_H
        cls = ' class="w"' if is_dark(f.fill) else ""
        mark = f' stroke="{xml_attr(f.mark)}" stroke-width="2"' if f.mark else ""
        out.append(
            f"<g><title>{xml_text(f.title)}</title>"
            f'<rect x="{fmt(x)}" y="{fmt(y)}" width="{fmt(w)}" height="{FRAME_H - 1}" fill="{f.fill}" rx="2"{mark}/>'
            f'<text x="{fmt(x + 3)}" y="{fmt(y + 11.5)}"{cls}>{xml_text(fit_label(f.label, w))}</text></g>'
        )
    out.append("</g>")
    return top + levels * FRAME_H


def svg_document(
    *,
    title: str,
    subtitles: list[str],
    panels: list[Panel],
    legend: list[tuple[str, str]],
    icicle: bool,
    total_s: float,
    hint: str = "Click a frame to zoom in; Search (or Ctrl-F) highlights matching functions.",
    static: bool = False,
    width: int = WIDTH,
) -> str:
    """The complete SVG text. ``legend``: (fill colour, label) pairs, shown in order. ``static``: a
    picture to be read as an image (a PR comment's ``![](...)``): no script, no zoom or search
    controls, no hint; ``width`` pixels wide."""
    WIDTH = width  # the module default, overridden for this document
    inner = WIDTH - 2 * PAD
    body: list[str] = []
    body.append(_text("fg-t", WIDTH / 2, 26, _clip(title, inner - (0 if static else 260), 10.0), "middle"))
    y = 26.0
    for line in subtitles:
        y += 17
        body.append(_text("fg-s", WIDTH / 2, y, _clip(line, inner, 6.9), "middle"))
    if not static:
        body.append(f'<text class="fg-c fg-unzoom" x="{PAD}" y="26" style="display:none">Reset zoom</text>')
        # the controls and the hint are hidden until the script shows them: seen as an image (an
        # <img>, GitHub's view of an attached SVG) no script runs, and no dead control is drawn
        body.append(f'<text class="fg-c fg-search" x="{WIDTH - PAD}" y="26" text-anchor="end" '
                    'style="display:none">Search</text>')
    y += 14
    for i, panel in enumerate(panels):
        if i:
            y += 12
        y = _panel(body, panel, y, icicle, WIDTH)
    if not static:
        y += 18
        body.append(f'<text class="fg-details" x="{PAD}" y="{fmt(y)}" style="display:none">{xml_text(hint)}</text>')
        y += 16  # its own line: a long hover text never runs into it
        body.append(f'<text class="fg-matched" x="{WIDTH - PAD}" y="{fmt(y)}" text-anchor="end"></text>')
    if legend:
        y += 24
        x = float(PAD)
        for colour, label in legend:
            label = _clip(label, inner - 30, 6.9)
            item_w = 16 + len(label) * 6.9 + 22
            if x > PAD and x + item_w > WIDTH - PAD:
                x = float(PAD)
                y += 20
            body.append(
                f'<rect x="{fmt(x)}" y="{fmt(y - 10)}" width="12" height="12" rx="2" fill="{xml_attr(colour)}"/>'
                f'<text class="fg-l" x="{fmt(x + 17)}" y="{fmt(y)}">{xml_text(label)}</text>'
            )
            x += item_w
    height = round(y + 14)
    head = (
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" class="dynaprof-flame" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" data-total-s="{total_s:.9g}" data-x0="{PAD}" '
        f'data-w="{inner}" data-cw="{CHAR_W:g}">\n'
        f"<style>{_CSS}</style>\n"
        f'<rect width="{WIDTH}" height="{height}" fill="#fcfcfc"/>\n'
    )
    tail = "\n</svg>\n" if static else f'\n<script type="text/ecmascript"><![CDATA[\n{script()}]]></script>\n</svg>\n'
    return head + "\n".join(body) + tail
