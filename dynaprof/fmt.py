"""Small text formatting helpers shared by analysis sentences and renderers."""

from __future__ import annotations

import re

_SITE = re.compile(r".*/(?:site|dist)-packages/")
_UNSAFE_KEY = re.compile(r"[^A-Za-z0-9._-]")


def seconds(s: float | None) -> str:
    """Human duration: 1.23 s, 45.6 ms, 789 us; '?' when unknown."""
    if s is None:
        return "?"
    if s >= 100:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 0.001:
        return f"{s * 1e3:.1f} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"
    if s > 0:
        return f"{s * 1e6:.0f} us"
    return "0 s"


def pct(part: float, whole: float | None) -> str:
    if not whole:
        return "?"
    return f"{100.0 * part / whole:.0f}%"


def short_path(path: str) -> str:
    """Strip site-packages and long prefixes: torch/_dynamo/guards.py, repro.py."""
    path = path.replace("\\", "/")
    m = _SITE.match(path)
    if m:
        return path[m.end() :]
    return path


def location(filename: str, lineno: int | None) -> str:
    base = short_path(filename)
    if "/" in base and not base.startswith("torch/"):
        base = base.rsplit("/", 1)[1]
    return f"{base}:{lineno}" if lineno else base


def count(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def one_line(text: str, limit: int = 160) -> str:
    """Collapse whitespace (user text may hold newlines) and cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def terminal_safe(text: str) -> str:
    """User text for a terminal: no escape sequences, control characters or bidi overrides
    (str.isprintable is False for all of them), one line."""
    flat = " ".join(text.split())
    return flat if flat.isprintable() else "".join(c if c.isprintable() else "?" for c in flat)


def table(headers: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """Plain-text columns; ``align`` holds 'l'/'r' per column (default: left)."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: list[str]) -> str:
        out = []
        for i, c in enumerate(cells):
            right = i < len(align) and align[i] == "r"
            out.append(c.rjust(widths[i]) if right else c.ljust(widths[i]))
        return "  ".join(out).rstrip()

    return [line(headers), *(line(r) for r in rows)]


def run_outcome(reason: str, status: int | None) -> str:
    """How the run ended, for the summary line: ``exited 0``, ``signal (status 143)``; a session
    profiled in-process (``dynaprof.profile``) has no exit status of its own."""
    if status is None:
        return "profiled in-process" + (" (the block raised)" if reason == "exception" else "")
    return f"exited {status}" if reason == "exited" else f"{reason} (status {status})"


def exit_fact(reason: str, status: int | None) -> str:
    """How the run ended, for the environment tables: ``exited, status 0``."""
    if status is None:
        return "profiled in-process" + (", the block raised" if reason == "exception" else "")
    return f"{reason}, status {status}"


def safe_key(key: str) -> str:
    """A compile key as a file name: ``0/0#1`` -> ``0_0-1``, ``!0/0/0`` -> ``x0_0_0``."""
    out = _UNSAFE_KEY.sub("_", key.replace("/", "_").replace("#", "-").replace("!", "x"))
    if not out or out.startswith("."):
        out = "_" + out
    return out
