"""Which frames are torch's own: the one rule capture (provenance, call sites) and the analysis
(user code in a cause, torch module names) share. Pure: no I/O."""

from __future__ import annotations


def torch_file(filename: str) -> bool:
    """Whether a frame's file is torch's: a ``torch/`` folder on its path (an installed torch or a
    source checkout), on any OS. Each caller adds its own rule for names that are not files
    (``<string>``). A user's project under a folder named ``torch`` reads as torch too: telling
    them apart needs torch's install location, which a saved session or a TORCH_TRACE log from
    another machine does not carry (attribution.md, Caveats)."""
    return "/torch/" in filename.replace("\\", "/")
