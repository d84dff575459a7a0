"""One root cause, one finding: graph breaks, restarts and failed compiles raised at one site.

A graph break makes Dynamo restart the frame's analysis and, where the code cannot be compiled
around it, fail the compile: one line of code can show as three findings (peft's
``target_parameters`` registers a parametrization inside ``forward``: 11 breaks, 11 restarts and 9
failed compiles, all at ``torch/nn/utils/parametrize.py:92``), whose shares then overlap. Here each
event is put at its site:

* a graph break at the file and line torch names for it;
* a restart at its frame's first graph break site (Dynamo restarts at the break);
* a failed compile at the line torch blames for it (``fail_filename``);
* a frame resumed after a break (the code after it) with that break's site, named in its code's
  name (``torch_dynamo_resume_in_helper_at_41``), else with the site that broke most.

A site with events of two kinds or more becomes one finding, with the seconds of their union, each
frame counted once: the whole compile of a frame that failed or that resumes after a break, else
the attempts its restarts threw away. It is named by the cause that owns the site (a site in
``parametrize.py`` is a parametrization registered inside the compiled code, with that remedy), and
a site in torch's own code names the nearest frame outside torch that reached it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from dynaprof import fmt
from dynaprof.model.code_names import RESUME_PREFIX
from dynaprof.model.reason_words import reason_words
from dynaprof.model.session import PARAMETRIZE_FILE, CompiledFrame, Session, display_name
from dynaprof.model.torch_files import torch_file

Site = tuple[str, int]
#: the finding keys whose events this module gathers by site
KINDS = ("graph_breaks", "restarts", "failures")
#: sites merged into one finding each, costliest first (the first screen shows a few findings)
MAX_SITES = 5


@dataclass
class SiteEvents:
    """What was raised at one site, in which frames, and what it cost."""

    site: Site
    breaks: int = 0
    restarts: int = 0
    failed: int = 0
    frames: set[str] = field(default_factory=set)
    via: Site | None = None

    @property
    def kinds(self) -> set[str]:
        return {k for k, n in zip(KINDS, (self.breaks, self.restarts, self.failed), strict=True) if n}


def _break_sites(f: CompiledFrame) -> list[tuple[Site, Site | None]]:
    return [((b.filename, b.lineno), (b.via_filename, b.via_lineno) if b.via_filename and b.via_lineno else None)
            for b in f.graph_break_reasons if b.filename and b.lineno is not None]  # fmt: skip


def site_events(session: Session) -> dict[Site, SiteEvents]:
    """Every site's events (see the module docstring)."""
    out: dict[Site, SiteEvents] = {}

    def at(site: Site, f: CompiledFrame, via: Site | None) -> SiteEvents:
        ev = out.setdefault(site, SiteEvents(site))
        ev.frames.add(f.key)
        if ev.via is None and torch_file(site[0]):
            ev.via = via or _own_code(f)
        return ev

    for f in session.frames:
        breaks = _break_sites(f)
        for site, via in breaks:
            at(site, f, via).breaks += 1
        if f.restarts and breaks:
            at(breaks[0][0], f, breaks[0][1]).restarts += f.restarts
        if f.status == "failed" and f.fail_filename and f.fail_lineno is not None:
            site = (f.fail_filename, f.fail_lineno)
            at(site, f, next((v for s, v in breaks if s == site and v), None)).failed += 1
    # the code after a break is compiled as a frame of its own (``..._at_41``): with its break's
    # site where its name and file say which, else with the site that broke most
    placed = {k for ev in out.values() for k in ev.frames}
    top = max((ev for ev in out.values() if ev.breaks), key=lambda ev: (ev.breaks, ev.site), default=None)
    for f in session.frames:
        if top is None or not f.name.startswith(RESUME_PREFIX) or f.key in placed:
            continue
        line = re.search(r"_at_(\d+)$", f.name)
        own = out.get((f.filename, int(line.group(1)))) if line else None
        (own if own is not None and own.breaks else top).frames.add(f.key)
    return out


def _own_code(f: CompiledFrame) -> Site | None:
    """A frame's own code, where it is outside torch: what reached a site in torch's code."""
    _, filename, lineno = display_name(f)
    return (filename, lineno) if filename and lineno and not torch_file(filename) else None


def union_seconds(session: Session, ev: SiteEvents) -> float:
    """The seconds a site's events cost, each frame once: a failed or resumed frame's whole compile,
    else the attempts its restarts threw away."""
    total = 0.0
    for f in session.frames:
        if f.key not in ev.frames:
            continue
        whole = f.status == "failed" or f.name.startswith(RESUME_PREFIX)
        total += (f.compile_time_s or 0.0) if whole else (discarded_seconds(f) or 0.0)
    return total


def discarded_seconds(f: CompiledFrame) -> float | None:
    """Time spent in attempts that were restarted (all but the last)."""
    if f.restarts == 0:
        return 0.0
    durations = [a.duration_s for a in sorted(f.attempts, key=lambda a: a.index)[:-1]]
    if durations and all(d is not None for d in durations):
        return sum(d for d in durations if d is not None)
    before = f.metrics.get("dynamo_time_before_restart_s")
    return float(before) if isinstance(before, (int, float)) else None


def merged_site(session: Session) -> SiteEvents | None:
    """The costliest site where events of two kinds or more were raised; None where there is none."""
    shared = [ev for ev in site_events(session).values() if len(ev.kinds) >= 2]
    return max(shared, key=lambda ev: (union_seconds(session, ev), ev.site), default=None)


def describe(session: Session, ev: SiteEvents, total: float) -> tuple[str, bool]:
    """The finding's words, and whether the site is a parametrization registered inside the
    compiled code (its cause and remedy)."""
    counts = [fmt.plural(n, what) for n, what in ((ev.breaks, "graph break"), (ev.restarts, "restart"),
                                                   (ev.failed, "failed compile")) if n]  # fmt: skip
    events = ", ".join(counts[:-1]) + (" and " if len(counts) > 1 else "") + counts[-1]
    secs = union_seconds(session, ev)
    where = fmt.location(*ev.site)
    via = f", reached from {_library_location(*ev.via)}" if ev.via else ""
    parametrize = PARAMETRIZE_FILE in ev.site[0].replace("\\", "/")
    subject = "parametrization registered inside the compiled code" if parametrize else f"graph break at {where}"
    reasons = Counter(b.reason for f in session.frames if f.key in ev.frames for b in f.graph_break_reasons
                      if (b.filename, b.lineno) == ev.site)  # fmt: skip
    text = (f"{subject}: {events} at {where}{via}, cost {fmt.seconds(secs)} ({fmt.pct(secs, total)} of compile, "
            "each frame once)")
    if reasons and not parametrize:
        text += f": {fmt.one_line(reason_words(reasons.most_common(1)[0][0]), 100)}"
    restarted = Counter(r for f in session.frames if f.key in ev.frames and f.restarts for r in f.restart_reasons)
    if restarted and not parametrize:
        text += f"; restarts: {fmt.one_line(reason_words(restarted.most_common(1)[0][0]), 100)}"
    return text, parametrize


def _library_location(filename: str, lineno: int) -> str:
    """``peft/tuners/lora/layer.py:1234`` for an installed package's file (the library is the
    news), ``model.py:12`` for the user's own."""
    path = filename.replace("\\", "/")
    if "-packages/" in path:
        return f"{fmt.short_path(path)}:{lineno}"
    return fmt.location(filename, lineno)


def graph_break_remedy(session: Session) -> str | None:
    """torch's own hint for the first graph break, at the user's line."""
    for f in session.frames:
        for r in f.graph_break_reasons:
            text = r.reason or ""
            at = f" at {fmt.location(r.filename, r.lineno)}" if r.filename else ""
            if "Hint:" in text:
                hint = fmt.one_line(text.split("Hint:", 1)[1].split("Hint:", 1)[0], 140)
                return f"graph break{at}: {hint} (torch's hint)"
            if at:
                return f"graph break{at}: move what Dynamo cannot trace out of the compiled code"
    return None
