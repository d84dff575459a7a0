"""Small text formatting helpers shared by analysis sentences and renderers."""

from __future__ import annotations

import re
from typing import Literal

_SITE = re.compile(r".*[/\\](?:site|dist)-packages[/\\]")
_STDLIB = re.compile(r".*[/\\]lib[/\\]python\d+(?:\.\d+)?[/\\]")
_UNSAFE_KEY = re.compile(r"[^A-Za-z0-9._-]")


#: how each kind of output writes a duration (``duration``'s ``style``)
DurationStyle = Literal["summary", "compare", "graph", "ms", "diff", "dot"]


def duration(s: float | None, style: DurationStyle = "summary", sign: bool = False) -> str:
    """Every duration dynaprof writes, in the style of the output it goes to ('?' when unknown):

    * ``summary`` (terminal, Markdown, HTML): 1.23 s, 45.6 ms, 789 us;
    * ``compare`` (two decimals where a PR reader wants them; ``sign`` for deltas): +0.84 s, 12.3 s;
    * ``ms`` (flamegraph tooltips): 1,234.5 ms, 0.042 ms;
    * ``graph`` (flamegraph notes): ``ms`` below 10 s, 12.34 s above;
    * ``diff`` (differential flamegraphs; ``sign`` for deltas): +12.3 ms;
    * ``dot`` (call graph labels): 0.123 s, 4.56 ms.
    """
    if s is None:
        return "?"
    a = abs(s)
    p = "+" if sign and s > 0 else "-" if s < 0 else ""
    if style == "compare":
        if a >= 100:
            return f"{p}{a:.0f} s"
        if a >= 10:
            return f"{p}{a:.1f} s"
        return f"{p}{a:.2f} s" if a >= 0.01 or a == 0 else p + duration(a)
    if style == "graph" and a >= 10:
        return f"{s:,.2f} s"
    if style in ("ms", "graph"):
        ms = s * 1e3
        return f"{ms:,.1f} ms" if abs(ms) >= 0.1 or ms == 0 else f"{ms:.3f} ms"
    if style == "diff":
        return f"{s * 1e3:+,.1f} ms" if sign else f"{s * 1e3:,.1f} ms"
    if style == "dot":
        return f"{s:.3f} s" if s >= 0.01 else f"{s * 1e3:.2f} ms"
    if s >= 100:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 0.001:
        return f"{s * 1e3:.1f} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"
    if s > 0:
        return f"{s * 1e6:.0f} us"
    return "0 s"


def seconds(s: float | None) -> str:
    """Human duration: 1.23 s, 45.6 ms, 789 us; '?' when unknown (``duration``'s summary style)."""
    return duration(s)


def pct(part: float, whole: float | None) -> str:
    if not whole:
        return "?"
    return f"{100.0 * part / whole:.0f}%"


def package_path(path: str, stdlib: bool = False) -> str:
    """``path`` below its (last) site-packages or dist-packages folder: ``torch/_dynamo/guards.py``;
    with ``stdlib``, else below the standard library's folder (``importlib/__init__.py``); else
    unchanged. The one rule for every output that shortens file names."""
    m = _SITE.match(path) or (_STDLIB.match(path) if stdlib else None)
    return path[m.end() :] if m else path


def short_path(path: str) -> str:
    """Strip site-packages and long prefixes: torch/_dynamo/guards.py, repro.py."""
    return package_path(path.replace("\\", "/"))


def location(filename: str, lineno: int | None) -> str:
    base = short_path(filename)
    if "/" in base and not base.startswith("torch/"):
        base = base.rsplit("/", 1)[1]
    return f"{base}:{lineno}" if lineno else base


def stored_s(seconds: float) -> float:
    """Seconds as the journal and session.json store them: to the microsecond (finer is noise, and
    fixed digits keep a saved session's bytes the same from run to run of the same facts)."""
    return round(seconds, 6)


def count(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def plural(n: int | None, noun: str, nouns: str | None = None) -> str:
    """``1 compile``, ``2 compiles``, ``? compiles`` (unknown); ``nouns``: an irregular plural. The
    one way every output says how many of something there are."""
    return f"{count(n)} {noun if n == 1 else (nouns or noun + 's')}"


def one_line(text: str, limit: int = 160) -> str:
    """Collapse whitespace (user text may hold newlines) and cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def terminal_safe(text: str) -> str:
    """User text for a terminal: no escape sequences, control characters or bidi overrides
    (str.isprintable is False for all of them), one line."""
    flat = " ".join(text.split())
    return flat if flat.isprintable() else "".join(c if c.isprintable() else "?" for c in flat)


def table(headers: list[str], rows: list[list[str]], align: str = "", width: int | None = None,
          wrap: int | None = None) -> list[str]:
    """Plain-text columns; ``align`` holds 'l'/'r' per column (default: left). With ``width`` and
    ``wrap`` (a column's index), a table wider than ``width`` narrows that column (to ``MIN_WRAP``
    at least), and a cell too long for it wraps inside its column, the way ``rich`` does: the row's
    numbers stand on its first line, beside the start of the name, and the name goes on below in
    its own column; never cut to an ellipsis that two rows could share."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    if width is not None and wrap is not None:
        over = sum(widths) + 2 * (len(widths) - 1) - width
        if over > 0:
            widths[wrap] = max(MIN_WRAP, len(headers[wrap]), widths[wrap] - over)

    def line(cells: list[str]) -> str:
        out = []
        for i, c in enumerate(cells):
            right = i < len(align) and align[i] == "r"
            out.append(c.rjust(widths[i]) if right else c.ljust(widths[i]))
        return "  ".join(out).rstrip()

    out = [line(headers)]
    for row in rows:
        if wrap is None or len(row[wrap]) <= widths[wrap]:
            out.append(line(row))
            continue
        pieces = wrap_cell(row[wrap], widths[wrap])
        out.append(line([pieces[0] if i == wrap else c for i, c in enumerate(row)]))
        out += [line([p if i == wrap else "" for i in range(len(row))]) for p in pieces[1:]]
    return out


#: the narrowest a wrapped table column gets
MIN_WRAP = 12


def wrap_cell(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after a space, a path separator or
    a dot where it can, else anywhere; every character kept."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    rest, out = text[len(indent):], []
    room = max(1, width - len(indent))
    while len(rest) > room:
        # a space if it leaves the line at least half full, else a path's or name's joint
        cut = next((pos for c in " /_." if (pos := rest.rfind(c, 1, room)) >= room // 2), -1)
        cut = cut + 1 if cut > 0 else room
        out.append(indent + rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return [*out, indent + rest]


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
