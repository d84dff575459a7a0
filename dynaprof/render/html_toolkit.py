"""The HTML page toolkit: what every page (``report.html``, ``compare.html``, the multi-rank pages)
is made with. Each page is self-contained (inline CSS, JS and SVG): a Content-Security-Policy
(``CSP``) forbids every fetch, so a file behaves the same offline, attached to a PR, or opened
from a CI artifact.

Every HTML page is a Jinja2 template in ``render/templates/`` rendered by :func:`render_page` with
autoescaping on: the renderers build a view-model of plain, already formatted text and numbers
(the pieces below, which ``templates/macros.html.j2`` lays out; each page's own in its module:
``report_html``, ``compare_report``, ``ranks``) and the template lays it out, escaping every value
it prints. The only values marked safe (``markupsafe.Markup``) are the SVG our own writers made (which escape
user text themselves), the package's own CSS/JS assets and the JSON island (``tojson``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

import jinja2
from markupsafe import Markup

from dynaprof import fmt

__all__ = ["CSP", "TD", "Cell", "Col", "Kpi", "Link", "Page", "Table", "asset", "environment",
           "inline_svg", "nav", "num", "render_page", "secs", "table"]

CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "font-src data:; base-uri 'none'; form-action 'none'")

#: characters HTML does not allow in text (C0 controls but tab, newline and CR; DEL; lone surrogates)
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_PROLOG = re.compile(r"^.*?(?=<svg[\s>])", re.S)


# ---------------------------------------------------------------------------------------------
# templates


def _finalize(value: object) -> object:
    """Every ``{{ value }}`` a template prints, before autoescaping: characters HTML forbids in
    text become U+FFFD (a lone surrogate could not even be written as UTF-8). ``Markup`` passes."""
    if value.__class__ is str:  # nearly every value: a search is cheaper than a substitution
        return _INVALID.sub("\ufffd", value) if _INVALID.search(value) else value
    if isinstance(value, str) and not isinstance(value, Markup):
        return _INVALID.sub("\ufffd", value)
    return value


@cache
def environment() -> jinja2.Environment:
    """The templates' environment: HTML-escapes every printed value, fails on a missing name."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("dynaprof.render", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    # the JSON island: sorted keys for deterministic output, no NaN (not JSON); tojson itself
    # writes <, >, & and ' as \uXXXX so the data cannot end its <script> element
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "allow_nan": False}
    return env


@dataclass(frozen=True)
class Page:
    """What every page has (``templates/page.html.j2``): the title, the header, the navigation
    links to its sections and the JSON island (``None``: none)."""

    title: str
    brand: str
    heading: str
    meta: str | None  # the line under the heading; None: no line
    nav: list[tuple[str, str]]  # (anchor, label)
    data: dict[str, Any] | None = None


def render_page(template: str, page: Page, view: object) -> str:
    """Render ``templates/<template>`` (extending ``page.html.j2``) with ``page`` and its ``view``."""
    # the stylesheet and script are the package's own files, inlined as they are
    css, js = Markup(asset("report.css")), Markup(asset("report.js"))
    return environment().get_template(template).render(csp=CSP, css=css, js=js, page=page, v=view)


@cache
def asset(name: str) -> str:
    return resources.files("dynaprof.render").joinpath(f"assets/{name}").read_text(encoding="utf-8")


def inline_svg(svg: str) -> Markup:
    """An SVG document ready to sit inside HTML: XML declaration, DOCTYPE and comments dropped.

    Only for SVG our own writers made (``flamegraph_svg``, the call graph's Graphviz output of our
    escaped DOT): they escape user text themselves, so the result is marked safe for templates."""
    return Markup(_PROLOG.sub("", svg, count=1).strip())


# ---------------------------------------------------------------------------------------------
# view-model pieces the page templates share (templates/macros.html.j2)


class Link(NamedTuple):
    href: str
    label: str


class Kpi(NamedTuple):
    label: str
    value: str
    detail: str = ""


@dataclass(frozen=True)
class Col:
    label: str
    numeric: bool = False
    code: bool = False
    nowrap: bool = False  # short code-like cells (compile ids, file:line) that must not break

    @property
    def cls(self) -> str:
        """The class of this column's cells."""
        return "n" if self.numeric else ("code" + " nw" * self.nowrap) if self.code else ""


class Cell(NamedTuple):
    """A table cell given to ``table``: its text, or links instead (joined by " · "), optionally
    inside a ``<span>`` of class ``span``; ``key`` sorts it."""

    text: str = ""
    key: float | None = None
    span: str = ""
    links: tuple[Link, ...] = ()


#: a cell as the template gets it: (class, sort key as text or "", text, span class or "", links)
TD = tuple[str, str, str, str, tuple[Link, ...]]


@dataclass(frozen=True)
class Table:
    cols: Sequence[Col]
    rows: list[list[TD]]
    classes: str
    wrap: str  # the class of the box around it: "dp-scroll" (long tables) or "dp-x"
    more: str = ""  # how many rows were left out ("1,000"), "" when none
    noun: str = "rows"


def table(cols: Sequence[Col], rows: Iterable[Sequence[object]], *, sortable: bool = True, scroll: bool = False,
          total: int | None = None, noun: str = "rows", compact: bool = False) -> Table:
    """A table; each cell is text, a (text, numeric sort key) pair or a ``Cell``."""
    classes = [c.cls for c in cols]
    body: list[list[TD]] = []
    for row in rows:
        cells: list[TD] = []
        for cls, cell in zip(classes, row, strict=True):
            text: object
            if isinstance(cell, Cell):
                text, key, span, links = cell
            elif isinstance(cell, tuple):
                (text, key), span, links = cell, "", ()
            else:
                text, key, span, links = cell, None, "", ()
            key = key if isinstance(key, (int, float)) else None
            cells.append((cls, "" if key is None else f"{key:.9g}", text if isinstance(text, str) else str(text), span,
                          links))
        body.append(cells)
    more = f"{total - len(body):,}" if total is not None and total > len(body) else ""
    return Table(cols, body, "dp-table" + (" sortable" if sortable else "") + (" compact" if compact else ""),
                 "dp-scroll" if scroll or len(body) > 30 else "dp-x", more, noun)


def secs(s: float | None) -> tuple[str, float | None]:
    return fmt.seconds(s), s


def num(n: int | None) -> tuple[str, float | None]:
    return fmt.count(n), None if n is None else float(n)


def nav(present: Iterable[str], order: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (anchor, label) links of the sections present, in ``order``."""
    have = set(present)
    return [(a, label) for a, label in order if a in have]
