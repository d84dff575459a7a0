"""The run folder's file names that other outputs refer to, and which renderer writes each.

Part of the renderer registry (``registry.py`` lists the renderers; this module names what they
write that a report links to). Kept apart so that the reports can import it without importing
the registry, which imports every renderer on use.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from dynaprof.model.session import Session

REPORT_HTML = "report.html"
SUMMARY_MD = "summary.md"
SUMMARY_TXT = "summary.txt"
TRACE_JSON = "trace.json"
CALLGRAPH_SVG = "callgraph.svg"
CALLGRAPH_DOT = "callgraph.dot"


def flamegraph_file(view: str) -> str:
    return f"flame-{view}.svg"


class Linked(NamedTuple):
    label: str
    file: str
    #: the registry name of the renderer that writes it
    renderer: str
    #: linked only for a session with sampled stacks (the graphs of samples)
    sampled: bool = False


#: what the summary links to, in this order
LINKED: tuple[Linked, ...] = (
    Linked("full report", REPORT_HTML, "html"),
    Linked("compiler flamegraph", flamegraph_file("compiler"), "flamegraphs", sampled=True),
    Linked("user-code flamegraph", flamegraph_file("traced"), "flamegraphs", sampled=True),
    Linked("call graph", CALLGRAPH_SVG, "callgraph", sampled=True),
    Linked("trace (Perfetto)", TRACE_JSON, "chrome_trace"),
)


def report_links(session: Session, made: Collection[str] | None = None) -> list[tuple[str, str]]:
    """(label, file) of what a report of ``session`` links to. ``made``: the files this render
    made or is about to make (``RenderContext.made``); a file not in it is not linked. None: not
    known (a report rendered on its own), every file that a full render would make is linked."""
    sampled = session.samples is not None and bool(session.samples.stacks)
    return [(x.label, x.file) for x in LINKED if (sampled or not x.sampled) and (made is None or x.file in made)]
