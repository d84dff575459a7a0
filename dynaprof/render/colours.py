"""Every colour a category or phase gets, in one table per axis (flamegraph fills, the report's
swatches, the call graph's outlines), and how a frame's fill is derived (deterministic shades)."""

from __future__ import annotations

import colorsys
import zlib
from typing import NamedTuple

HSL = tuple[float, float, float]


class CategoryColour(NamedTuple):
    #: base (hue degrees, saturation, lightness) of flamegraph frames and report swatches
    fill: HSL
    #: the call graph's node outline (``#rrggbb``; the fill there is the heat)
    outline: str


#: per attribution category: warm fills for all, except parametrization, a strong magenta so it
#: stands out at a glance
CATEGORY_COLOURS: dict[str, CategoryColour] = {
    "restarts": CategoryColour((2.0, 0.55, 0.60), "#7f7f7f"),
    "parametrization": CategoryColour((292.0, 0.80, 0.50), "#ff00ff"),
    "guard_building": CategoryColour((50.0, 0.85, 0.56), "#ff9900"),
    "cpp_triton_compile": CategoryColour((22.0, 0.50, 0.42), "#8c564b"),
    "inductor_codegen": CategoryColour((10.0, 0.80, 0.62), "#17becf"),
    "aot_autograd": CategoryColour((38.0, 0.90, 0.52), "#2ca02c"),
    "fake_tensor": CategoryColour((30.0, 0.85, 0.74), "#9467bd"),
    "user_tracing": CategoryColour((24.0, 0.92, 0.60), "#000000"),
    "other": CategoryColour((35.0, 0.22, 0.66), "#bbbbbb"),
}
CATEGORY_HSL: dict[str, HSL] = {k: v.fill for k, v in CATEGORY_COLOURS.items()}
CATEGORY_OUTLINE: dict[str, str] = {k: v.outline for k, v in CATEGORY_COLOURS.items()}
UNKNOWN_HSL = (0.0, 0.0, 0.75)

#: base (hue, saturation, lightness) per compiler phase, for the user-code view: Dynamo's work in
#: warm shades, AOT autograd in greens, Inductor in blues, kernel compile brown, the rest grey/tan
PHASE_HSL: dict[str, HSL] = {
    "dynamo_tracing": (24.0, 0.92, 0.60),
    "fake_tensor": (36.0, 0.85, 0.72),
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
    "cache": (0.0, 0.0, 0.68),
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


def category_colour(category: str | None, seed: str = "") -> str:
    """The fill for a frame of ``category``; ``seed`` (the function name) shifts the shade a
    little, derived from a CRC so colours are the same on every run and machine."""
    return _shade(CATEGORY_HSL.get(category or "", UNKNOWN_HSL), seed)


def phase_colour(phase: str | None, seed: str = "") -> str:
    """The fill for a frame of ``phase`` (user-code view), shaded by ``seed`` like categories."""
    return _shade(PHASE_HSL.get(phase or "", UNKNOWN_HSL), seed)
