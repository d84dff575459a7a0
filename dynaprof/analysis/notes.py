"""Which notes a first screen shows. A run's notes (``CaptureInfo.warnings``) are all kept and
all listed in report.html and summary.md; the terminal shows those that change how its numbers
should be read (a lost profile, a torch that hides a fact, a hook missing) and says in one line how
many notes about dynaprof's own workings it left to the report: the rate it adapted to, guard code
sizes it could not print, samples scaled to torch's timer. Too few samples to trust the shares is
said there too, whatever the notes."""

from __future__ import annotations

from dynaprof import fmt
from dynaprof.model.session import Session

#: the openings of the notes about dynaprof's own workings (their one home: what writes them keeps
#: these words, ``tests/unit/test_notes.py`` checks each against a real note's text)
ABOUT_DYNAPROF = ("sampled at ", "the sampler achieved ", "guard code sizes of ", "sampled seconds of ")
#: fewer samples than this and a cause's share moves by several points from run to run
FEW_SAMPLES = 200


def first_screen_notes(session: Session) -> tuple[list[str], int]:
    """(the notes a first screen shows, how many it leaves to the report)."""
    warnings = session.capture.warnings
    shown = [w for w in warnings if not w.startswith(ABOUT_DYNAPROF)]
    samples = session.samples
    if samples is not None and 0 < samples.count < FEW_SAMPLES and session.frames:
        shown.insert(0, f"only {fmt.plural(samples.count, 'sample')} in this run: each cause's share is coarse "
                        "(a longer compile, or --rate, gives more)")
    return shown, len(warnings) - sum(1 for w in warnings if not w.startswith(ABOUT_DYNAPROF))
