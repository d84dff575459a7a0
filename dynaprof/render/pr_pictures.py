"""``dynaprof pr``: a pull-request comment and the static pictures it shows inline.

``pr_files`` (one run) and ``pr_compare_files`` (BASE -> NEW) return ``{name: text}`` for the
``pr/`` folder: ``comment.md`` (GitHub-flavoured Markdown under ``COMMENT_LIMIT`` characters, whose
only links are the pictures beside it, by relative path) and the pictures, static SVGs meant to be
read as images (``![...](user-code.svg)``): ``PICTURE_WIDTH`` px wide, no script, no controls.

Colours mean phases in every picture: the user-code flamegraph (its frames are the causes: the user
code each second was spent for; ``render.colours.phase_colour``) and the phase bars, one segment per
phase group, the cause x phase table's columns (``category_colour``; the causes of each named in its
tooltip, and in the comment's cause x phase table).
"""

from __future__ import annotations

from dynaprof import fmt
from dynaprof.analysis.attribution import group_seconds
from dynaprof.analysis.compare import Comparison
from dynaprof.model.session import CATEGORIES, CATEGORY_LABELS, PHASE_GROUPS, Session
from dynaprof.render import markdown as md
from dynaprof.render.base import RenderContext, RenderOptions
from dynaprof.render.colours import category_colour
from dynaprof.render.flamegraph import flamegraph_svg
from dynaprof.render.flamegraph_svg import is_dark, xml_attr, xml_text

PICTURE_WIDTH = 880
#: GitHub refuses comments longer than this
COMMENT_LIMIT = 65_536
COMMENT = "comment.md"
USER_CODE = "user-code.svg"
PHASES_SVG = "phases.svg"

_PAD = 10
_LABEL_W = 110
_TOTAL_W = 80
_BAR_H = 26


def user_code_svg(ctx: RenderContext) -> str:
    """The whole-pipeline user-code flamegraph (frames: the user code traced; colour: phase), static."""
    return flamegraph_svg(ctx.session, "traced", None, ctx.options, derived=ctx.derived, static=True,
                          width=PICTURE_WIDTH)


def _phases(session: Session) -> dict[str, float]:
    """Seconds per phase group: the cause x phase table's column totals."""
    return {k: v for k, v in group_seconds(session.axes).items() if v > 0} if session.axes is not None else {}


_GROUP_PHASES = {g.key: g.phases for g in PHASE_GROUPS}


def _causes_of(session: Session, group: str, limit: int = 3) -> str:
    ax = session.axes
    row: dict[str, float] = {}
    for phase in _GROUP_PHASES.get(group, ()):
        for c, v in (ax.matrix.get(phase, {}) if ax is not None else {}).items():
            row[c] = row.get(c, 0.0) + v
    top = sorted(((c, v) for c, v in row.items() if v > 0), key=lambda cv: (-cv[1], cv[0]))[:limit]
    return "; ".join(f"{fmt.one_line(fmt.terminal_safe(c), 80)} {fmt.seconds(v)}" for c, v in top)


def phases_svg(runs: list[tuple[str, Session]]) -> str:
    """One horizontal bar per run: its sampled seconds per phase group, coloured by group, widths
    on one scale (so BASE and NEW compare); each segment's tooltip names the phase's top causes."""
    w = PICTURE_WIDTH
    bar_w = w - 2 * _PAD - _LABEL_W - _TOTAL_W
    per = [(label, s, _phases(s)) for label, s in runs]
    scale = max((sum(p.values()) for _, _, p in per), default=0.0) or 1.0
    body: list[str] = []
    y = 30.0
    body.append(f'<text class="t" x="{_PAD}" y="20">Compile time by phase (sampled seconds; colour = phase)</text>')
    used: list[str] = []
    for label, s, phases in per:
        total = sum(phases.values())
        body.append(f'<text x="{_PAD}" y="{y + 17:g}">{xml_text(fmt.one_line(label, 16))}</text>')
        x = float(_PAD + _LABEL_W)
        if not phases:
            body.append(f'<text class="m" x="{x:g}" y="{y + 17:g}">no cause x phase data (not sampled, '
                        "or an older session)</text>")
        for phase in [p for p in CATEGORIES if p in phases]:
            secs = phases[phase]
            seg = bar_w * secs / scale
            if phase not in used:
                used.append(phase)
            colour = category_colour(phase)
            name = CATEGORY_LABELS.get(phase, phase)
            tip = f"{name}: {fmt.seconds(secs)} ({fmt.pct(secs, s.total_compile_s)} of compile)"
            causes = _causes_of(s, phase)
            tip += f"; causes: {causes}" if causes else ""
            text = ""
            for cand in (f"{name} {fmt.seconds(secs)}", fmt.seconds(secs)):
                if len(cand) * 6.6 + 6 <= seg:
                    text = cand
                    break
            cls = ' class="w"' if is_dark(colour) else ""
            body.append(f'<g><title>{xml_text(tip)}</title><rect x="{x:.1f}" y="{y:g}" width="{max(seg, 0.5):.1f}" '
                        f'height="{_BAR_H}" fill="{xml_attr(colour)}"/>'
                        + (f'<text{cls} x="{x + 3:.1f}" y="{y + 17:g}">{xml_text(text)}</text>' if text else "")
                        + "</g>")
            x += seg
        compile_s = s.total_compile_s
        body.append(f'<text x="{w - _PAD}" y="{y + 17:g}" text-anchor="end">{fmt.seconds(total)} of '
                    f"{fmt.seconds(compile_s)}</text>")
        y += _BAR_H + 10
    y += 8
    x = float(_PAD)
    for phase in used:
        label = CATEGORY_LABELS.get(phase, phase)
        item = 16 + len(label) * 6.6 + 18
        if x > _PAD and x + item > w - _PAD:
            x, y = float(_PAD), y + 20
        swatch = xml_attr(category_colour(phase))
        body.append(f'<rect x="{x:.1f}" y="{y - 10:g}" width="12" height="12" fill="{swatch}"/>'
                    f'<text x="{x + 16:.1f}" y="{y:g}">{xml_text(label)}</text>')
        x += item
    height = round(y + 12)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{height}" '
        f'viewBox="0 0 {w} {height}">\n'
        "<style>text{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;font-size:12px;fill:#1d1d1d}"
        ".t{font-size:14px;font-weight:bold}.m{fill:#777}text.w{fill:#fff}</style>\n"
        f'<rect width="{w}" height="{height}" fill="#fcfcfc"/>\n' + "\n".join(body) + "\n</svg>\n"
    )


def _pictures(items: list[tuple[str, str]]) -> str:
    """``![alt](file)`` lines: the only references the comment makes, all to files beside it."""
    return "\n\n".join(f"![{md.md_escape(alt)}]({name})" for alt, name in items)


def pr_files(ctx: RenderContext) -> dict[str, str]:
    """``pr/`` for one run: the comment and its two pictures."""
    s = ctx.session
    pics = [("compile time by phase", PHASES_SVG)]
    files = {PHASES_SVG: phases_svg([("this run", s)])}
    if s.samples is not None and s.samples.stacks:
        files[USER_CODE] = user_code_svg(ctx)
        pics.insert(0, ("user code traced, coloured by phase", USER_CODE))
    head = _pictures(pics) + "\n\n"
    body = md.summary_markdown(s, ctx.options.max_rows, max_chars=COMMENT_LIMIT - len(head) - 1000, made=set())
    lines = body.split("\n")
    # the picture goes under the verdict, before the tables
    at = next((i for i, line in enumerate(lines) if line.startswith("**Totals:**")), 0) + 1
    comment = "\n".join(lines[:at]) + "\n\n" + head + "\n".join(lines[at:]).lstrip("\n")
    files[COMMENT] = comment
    return files


def pr_compare_files(cmp: Comparison, base: Session, new: Session, names: tuple[str, str],
                     base_ctx: RenderContext, new_ctx: RenderContext, options: RenderOptions) -> dict[str, str]:
    """``pr/`` for BASE -> NEW: the compare report as the comment, the phase bars of both runs and
    each run's user-code flamegraph."""
    from dynaprof.render.compare_report import compare_markdown

    files = {PHASES_SVG: phases_svg([(f"BASE {names[0]}", base), (f"NEW {names[1]}", new)])}
    pics = [("compile time by phase, BASE and NEW", PHASES_SVG)]
    for side, ctx in (("base", base_ctx), ("new", new_ctx)):
        if ctx.session.samples is not None and ctx.session.samples.stacks:
            name = f"{side}-{USER_CODE}"
            files[name] = user_code_svg(ctx)
            pics.append((f"{side.upper()}: user code traced, coloured by phase", name))
    body = compare_markdown(cmp, base, new, names, [], options.max_rows)
    lines = body.split("\n")
    at = next((i for i, line in enumerate(lines) if line.startswith("#### Totals")), len(lines))
    comment = "\n".join(lines[:at]) + "\n" + _pictures(pics) + "\n\n" + "\n".join(lines[at:])
    if len(comment) >= COMMENT_LIMIT:
        comment = comment[: COMMENT_LIMIT - 100].rsplit("\n", 1)[0] + "\n\n_(shortened to fit a comment)_\n"
    files[COMMENT] = comment
    return files
