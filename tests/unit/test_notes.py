"""The first screen's notes: those that change how the numbers read; the rest counted, in the report."""

from __future__ import annotations

from dynaprof.analysis.notes import ABOUT_DYNAPROF, FEW_SAMPLES, first_screen_notes
from dynaprof.render.terminal import summary_text
from tests.factories import seed_session

#: a real note of each kind about dynaprof itself, as its writer words it (kept in step with
#: capture/sampler.py, capture/recorder.py and ingest/frame_samples.py)
SELF_NOTES = [
    "sampled at 300 Hz, not 1,000: a sample costs a compile ~96 us on this machine",
    "the sampler achieved 94 of the 300 samples/s asked (the compiling thread was busy in C code",
    "guard code sizes of 1 compile are unknown: the script freed the compiled code before dynaprof",
    "sampled seconds of 1 compile exceeded torch's compile time by 4.4 ms in all and were scaled",
]


def test_notes_about_dynaprof_itself_leave_the_first_screen_and_are_counted() -> None:
    s = seed_session()
    s.capture.warnings = [*SELF_NOTES, "torch 2.4.1: lazy backward compiles are not sampled"]
    shown, left = first_screen_notes(s)
    assert shown == ["torch 2.4.1: lazy backward compiles are not sampled"] and left == 4
    text = summary_text(s)
    assert "note: torch 2.4.1" in text and "(4 more notes: in summary.md and report.html)" in text
    assert "sampled at 300 Hz" not in text


def test_each_self_note_opening_matches_its_writer() -> None:
    import inspect

    from dynaprof.capture import recorder, sampler
    from dynaprof.ingest import frame_samples

    source = "".join(inspect.getsource(m) for m in (sampler, recorder, frame_samples))
    for opening in ABOUT_DYNAPROF:
        assert f'f"{opening}' in source, opening  # a writer that rewords its note must change this list
    assert all(n.startswith(ABOUT_DYNAPROF) for n in SELF_NOTES)


def test_too_few_samples_is_said_on_the_first_screen() -> None:
    s = seed_session()
    assert s.samples is not None
    s.samples.count = FEW_SAMPLES - 1
    shown, _ = first_screen_notes(s)
    assert shown and shown[0].startswith(f"only {FEW_SAMPLES - 1} samples")


def test_every_note_is_in_the_notes_of_summary_md_and_report_html() -> None:
    from dynaprof.render.base import RenderContext
    from dynaprof.render.markdown import summary_markdown
    from dynaprof.render.report_html import report_html

    s = seed_session()
    s.capture.warnings = [*SELF_NOTES, "torch 2.4.1: <b>lazy</b> backward compiles are not sampled"]
    md = summary_markdown(s)
    assert f"<summary>Notes ({len(SELF_NOTES) + 1})</summary>" in md
    assert all(n[:40] in md for n in SELF_NOTES)
    page = report_html(RenderContext(s, use_dot=False))
    notes = page[page.index('id="notes"'):]
    assert all(n[:40] in notes for n in SELF_NOTES)
    assert "&lt;b&gt;lazy&lt;/b&gt;" in notes and "<b>lazy</b>" not in page  # user text escaped
