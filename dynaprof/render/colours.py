"""Every colour a phase group or phase gets, in one table per axis (flamegraph fills, the report's
swatches, the call graph's outlines), and how a frame's fill is derived (deterministic shades)."""

from __future__ import annotations

import colorsys
import zlib
from typing import NamedTuple

HSL = tuple[float, float, float]


class CategoryColour(NamedTuple):
    #: base (hue degrees, saturation, lightness) of flamegraph frames, report swatches and the
    #: call graph's node outlines (its fill is the heat)
    fill: HSL
    #: the old call-graph outline, kept for reference only: outlines now use ``fill``
    outline: str


#: per phase group (``model.session.PHASE_GROUPS``): warm fills for Dynamo's work, green for AOT
#: autograd, blue for Inductor, browns for kernel compile and the toolchain (the families the
#: user-code view's phases use, so a colour means one thing in every picture)
CATEGORY_COLOURS: dict[str, CategoryColour] = {
    "dynamo_tracing": CategoryColour((24.0, 0.92, 0.60), "#000000"),
    "fake_tensor": CategoryColour((30.0, 0.85, 0.74), "#9467bd"),
    "guard_building": CategoryColour((50.0, 0.85, 0.56), "#ff9900"),
    "aot_autograd": CategoryColour((140.0, 0.45, 0.50), "#2ca02c"),
    "inductor": CategoryColour((210.0, 0.60, 0.55), "#17becf"),
    "kernel_compile": CategoryColour((22.0, 0.50, 0.42), "#8c564b"),
    "toolchain_setup": CategoryColour((8.0, 0.35, 0.30), "#5a3a31"),
    "cache": CategoryColour((0.0, 0.0, 0.68), "#aaaaaa"),
    "garbage_collection": CategoryColour((180.0, 0.25, 0.55), "#6b9e9e"),
    "other": CategoryColour((35.0, 0.22, 0.66), "#bbbbbb"),
    # not a phase group: the inline view's parametrization calls and the call graph's parametrization
    # nodes, a strong magenta so they stand out at a glance
    "parametrization": CategoryColour((292.0, 0.80, 0.50), "#ff00ff"),
}
CATEGORY_HSL: dict[str, HSL] = {k: v.fill for k, v in CATEGORY_COLOURS.items()}
UNKNOWN_HSL = (0.0, 0.0, 0.75)

#: base (hue, saturation, lightness) per compiler phase, for the user-code view: Dynamo's work in
#: warm shades, AOT autograd in greens, Inductor in blues, kernel compile brown, the rest grey/tan
PHASE_HSL: dict[str, HSL] = {
    "dynamo_tracing": (24.0, 0.92, 0.60),
    "fake_tensor": (30.0, 0.85, 0.74),
    "guard_building": (50.0, 0.85, 0.56),
    "aot_trace": (140.0, 0.45, 0.50),
    "aot_partition": (160.0, 0.45, 0.45),
    "aot_other": (125.0, 0.35, 0.62),
    "graph_passes": (195.0, 0.55, 0.58),
    "lowering": (210.0, 0.60, 0.55),
    "scheduling": (225.0, 0.55, 0.62),
    "codegen": (240.0, 0.50, 0.66),
    "inductor_other": (215.0, 0.30, 0.70),
    "autotuning": (265.0, 0.45, 0.64),
    "kernel_compile": (22.0, 0.50, 0.42),
    "toolchain_setup": (8.0, 0.35, 0.30),
    "cache": (0.0, 0.0, 0.68),
    "garbage_collection": (180.0, 0.25, 0.55),
    "other": (35.0, 0.22, 0.66),
}


def _hex(h: float, s: float, lum: float) -> str:
    r, g, b = colorsys.hls_to_rgb((h % 360.0) / 360.0, max(0.0, min(1.0, lum)), max(0.0, min(1.0, s)))
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _shade(base: HSL, seed: str) -> str:
    h, s, lum = base
    if seed:
        v = zlib.crc32(seed.encode("utf-8", "surrogatepass"))
        h += ((v & 0xFF) / 255.0 - 0.5) * 10.0
        lum += (((v >> 8) & 0xFF) / 255.0 - 0.5) * 0.10
    return _hex(h, s, lum)


#: ColorBrewer's "Greys": the call graph's heat (inclusive time), a scale no category or phase
#: uses, so a colour means one thing in every picture
HEAT_STOPS: tuple[str, ...] = ("#f7f7f7", "#f0f0f0", "#d9d9d9", "#bdbdbd", "#969696", "#737373", "#525252",
                               "#353535", "#202020")


def heat_colour(weight: float) -> str:
    """``#rrggbb`` for a weight in [0, 1]: 0 near-white, 1 near-black."""
    w = min(max(weight, 0.0), 1.0) * (len(HEAT_STOPS) - 1)
    i = min(int(w), len(HEAT_STOPS) - 2)
    t = w - i
    a, b = HEAT_STOPS[i], HEAT_STOPS[i + 1]
    rgb = [round(int(a[k : k + 2], 16) * (1 - t) + int(b[k : k + 2], 16) * t) for k in (1, 3, 5)]
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def category_colour(category: str | None, seed: str = "") -> str:
    """The fill for a frame of ``category``; ``seed`` (the function name) shifts the shade a
    little, derived from a CRC so colours are the same on every run and machine."""
    return _shade(CATEGORY_HSL.get(category or "", UNKNOWN_HSL), seed)


def phase_colour(phase: str | None, seed: str = "") -> str:
    """The fill for a frame of ``phase`` (user-code view), shaded by ``seed`` like categories."""
    return _shade(PHASE_HSL.get(phase or "", UNKNOWN_HSL), seed)


#: frames that only pass time on to their callees (compiler view): a pale tint of the category
#: most of their time goes to, so the frames that spend the time stand out
PASS_THROUGH_SATURATION = 0.35
PASS_THROUGH_LIGHTNESS = 0.87
#: the frame gathering a node's children too narrow to draw
GATHERED_FILL = "#c8c8c8"


def pass_through_colour(category: str | None, seed: str = "") -> str:
    """The pale fill of a frame with little self time, for the category holding most of its time."""
    h, s, _lum = CATEGORY_HSL.get(category or "", UNKNOWN_HSL)
    return _shade((h, s * PASS_THROUGH_SATURATION, PASS_THROUGH_LIGHTNESS), seed)


def category_hex(category: str | None) -> str:
    """The category's own colour, unshaded (call graph outlines, legends)."""
    return _hex(*CATEGORY_HSL.get(category or "", UNKNOWN_HSL))


#: per category, the call graph's node outline: the same colour as the flamegraph's frames
CATEGORY_OUTLINE: dict[str, str] = {k: category_hex(k) for k in CATEGORY_COLOURS}
