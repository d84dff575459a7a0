"""How a parametrization cause's label is made, for the code that writes it (capture's provenance)
and the code that reads it back (the verdict's "via" list)."""

from __future__ import annotations

#: between a fused kernel's parametrization part and the code it is fused with:
#: ``Conv1d.weight via _WeightNorm, fused with forward (m.py:9)``
FUSED_WITH = ", fused with "
VIA = " via "


def via_classes(label: str) -> list[str]:
    """The parametrization classes a label names (``A.w, B.w via X, Y`` -> ``[X, Y]``), without
    the code a fused kernel's part is fused with."""
    if VIA not in label:
        return []
    classes = label.split(VIA, 1)[1].split(FUSED_WITH, 1)[0]
    return [c for c in classes.split(", ") if c]
