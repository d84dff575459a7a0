"""torch's restart and graph-break reasons in words, one rule for both importers and the reports."""

from __future__ import annotations

import re

from dynaprof.fmt import one_line as _one_line

_EXC_CLASS = re.compile(r"^<class '(?:[\w.]+\.)?(\w+)'>$")
_RESTART_WORDS = {
    "UnspecializeRestartAnalysis": "Dynamo stopped specializing on a value it had treated as a constant",
    "SpeculationRestartAnalysis": "Dynamo hit a graph break it could not resume from mid-inline",
    "TensorifyScalarRestartAnalysis": "Dynamo turned a Python scalar into a tensor input",
}


def reason_words(reason: str) -> str:
    """torch's restart or graph-break reason in words: the class name torch 2.4 gives explained,
    and 2.5+'s 'X  Explanation: Y  Hint: ...' cut to 'X: Y' (the hints go with the graph break)."""
    m = _EXC_CLASS.match(reason.strip())
    if m:
        name = m.group(1)
        return f"{_RESTART_WORDS.get(name, name)} ({name})"
    reason = reason.replace("Message: None", "")
    head, _, rest = reason.partition("Explanation:")
    explanation = rest.split("Hint:", 1)[0].split("Developer debug context:", 1)[0]
    head, _, hint = head.partition("Hint:")
    text = _one_line(head).rstrip(" .:")
    if explanation.strip():
        text += (": " if text else "") + _one_line(explanation).strip()
    if not text and hint.strip():  # only a hint: torch gave no message
        text = "torch gave no message; its hint: " + _one_line(hint.split("Hint:", 1)[0]).strip()
    return text or "torch gave no reason"
