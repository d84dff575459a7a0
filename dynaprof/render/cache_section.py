"""The "Cache" section of the reports, as plain text and rows: each page escapes it for its format.

``summary.md`` / the PR comment (``render.markdown``), ``report.html`` (``render.report_html``, through
``templates/cache_section.html.j2``), ``compare.md`` / ``compare.html`` (``render.compare_report``)
and the terminal of ``dynaprof compare`` (``cli.compare``) all show what these functions return.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dynaprof import fmt
from dynaprof.analysis.cache_misses import (
    bypasses,
    kernel_caches,
    kernels_served,
    misses_between,
    misses_in_run,
    warm_start,
)
from dynaprof.model.cache_keys import CACHE_NAMES, KERNEL_CACHES, CacheLookup
from dynaprof.model.session import Session

TITLE = "Cache"
HEADER = ["compile", "cache", "outcome", "why / time saved", "key"]


@dataclass(frozen=True)
class CacheSection:
    """What a page shows under "Cache": lines of text, then one row per lookup."""

    lines: list[str]
    header: list[str] = field(default_factory=lambda: list(HEADER))
    rows: list[list[str]] = field(default_factory=list)
    more: int = 0  # lookups not shown


def _short_key(key: str | None) -> str:
    """A hash key's first characters (enough to tell keys apart); a code location whole."""
    if not key:
        return ""
    if " " in key:
        return fmt.one_line(key, 120)
    return key if len(key) <= 16 else key[:12] + "..."


def _kernel_why(lk: CacheLookup) -> str:
    """A kernel lookup's kernel, where its binary came from or was built, and what is known of
    the time (torch says none saved per kernel)."""
    where = lk.reason or lk.outcome
    if lk.outcome == "hit":
        return f"{lk.kernel or '?'}: {where}; time saved not measured"
    took = f" in {fmt.seconds(lk.built_s)}" if lk.built_s is not None else " (build time not measured)"
    return f"{lk.kernel or '?'}: {where}{took if lk.outcome == 'miss' else ''}"


def run_lines(s: Session, limit: int = 10) -> list[str]:
    """One run's cache story: how much was served from cache, the kernels found on disk, each miss
    an identical graph's earlier lookup explains, each bypass with its reason."""
    out: list[str] = []
    warm = warm_start(s)
    if warm is not None:
        out.append(warm.line())
    out += [k.line() for k in kernel_caches(s)]
    explained = misses_in_run(s)
    out += [m.line() for m in explained[:limit]]
    if len(explained) > limit:
        out.append(f"... and {len(explained) - limit:,} more explained misses")
    out += [f"{lk.frame}: {CACHE_NAMES['pgo']} {lk.outcome}" + (f" (key {lk.key})" if lk.key else "")
            for lk in s.cache_keys.lookups if lk.cache == "pgo"][:limit]
    found = bypasses(s)
    out += [f"{lk.frame}: {CACHE_NAMES.get(lk.cache, lk.cache)} bypassed: {reason}" for lk, reason in found[:limit]]
    if len(found) > limit:
        out.append(f"... and {len(found) - limit:,} more bypasses")
    return out


def compare_lines(a: Session, b: Session, limit: int = 10, detail: int = 3) -> list[str]:
    """Two runs: each side's warm start, then each lookup that hit in BASE and missed in NEW with
    the differing components in words (the likeliest first, up to ``detail`` of them)."""
    out: list[str] = []
    wa, wb = warm_start(a), warm_start(b)
    if wa is not None or wb is not None:
        out.append(f"BASE {wa.line() if wa else 'looked up no cache'}; NEW {wb.line() if wb else 'looked up no cache'}")
    served = kernels_served(a, b)
    if served is not None:
        out.append(served.line())
    misses = misses_between(a, b)
    for m in misses[:limit]:
        out.append(m.line("BASE's "))
        out += [f"  also: {d.words}" for d in m.differences[1:detail]]
    if len(misses) > limit:
        out.append(f"... and {len(misses) - limit:,} more misses in NEW that hit in BASE")
    return out


def view(s: Session, limit: int = 200) -> CacheSection | None:
    """The section for one run; None when no compile looked up a cache. The graphs' lookups come
    first, then the kernels' (a big model's hundreds of kernels never hide a graph's lookup)."""
    lookups = s.cache_keys.lookups
    if not lookups:
        return None
    lookups = [lk for lk in lookups if lk.cache not in KERNEL_CACHES] + \
        [lk for lk in lookups if lk.cache in KERNEL_CACHES]  # fmt: skip
    rows = []
    for lk in lookups[:limit]:
        why = lk.reason or ""
        if lk.outcome == "hit" and lk.time_saved_s is not None:
            why = f"saved {fmt.seconds(lk.time_saved_s)}"
        if lk.cache in KERNEL_CACHES:
            why = _kernel_why(lk)
        rows.append([lk.frame, CACHE_NAMES.get(lk.cache, lk.cache), lk.outcome, fmt.one_line(why, 300),
                     _short_key(lk.key)])  # fmt: skip
    return CacheSection(run_lines(s), rows=rows, more=max(0, len(lookups) - limit))


def compare_view(a: Session, b: Session) -> CacheSection | None:
    """The section for a comparison; None when neither run looked up a cache."""
    if not a.cache_keys.lookups and not b.cache_keys.lookups:
        return None
    return CacheSection(compare_lines(a, b) or ["no lookup hit in BASE and missed in NEW"], header=[])
