"""How a code object Dynamo compiled or traced is named for a person: the one rule for every
table, finding and cause label.

After a graph break Dynamo compiles the rest of the frame as a new function named
``torch_dynamo_resume_in_<function>_at_<line>`` (nested after a second break). Shown as it is,
every such row reads ``torch_dynamo_resume_in_...`` once a table narrows it; shown as what it
resumes, ``forward after the graph break``, it says which function recompiled.
"""

from __future__ import annotations

import re

#: the prefix of the code Dynamo compiles after a graph break (torch's ``ContinueExecutionCache``)
RESUME_PREFIX = "torch_dynamo_resume_in_"
#: what a resume function's name says after the function it continues
_RESUMED = " after the graph break"
# a traced method's name carries its class: EncodecConv1d.torch_dynamo_resume_in__pad1d_at_150
_RESUME = re.compile(r"^(?P<owner>(?:[\w<>]+\.)*)torch_dynamo_resume_in_(?P<inner>.+)_at_(?P<line>\d+)$")


def resumed_function(name: str) -> tuple[str, int] | None:
    """(the function a resume function continues, the line of its last graph break), or None when
    ``name`` is no resume function. Nested resumes (a break after a break) name the outermost
    function and the latest break."""
    m = _RESUME.match(name)
    if m is None:
        return None
    inner, line = m.group("inner"), int(m.group("line"))
    deeper = resumed_function(inner)
    return m.group("owner") + (deeper[0] if deeper else inner), line


def code_name(name: str) -> str:
    """``forward after the graph break`` for a resume function, else ``name`` as it is."""
    resumed = resumed_function(name)
    return name if resumed is None else f"{resumed[0]}{_RESUMED}"


def code_label(name: str, filename: str, lineno: int | None) -> str:
    """``forward (model.py:12)``; a resume function as ``forward after the graph break (model.py:40)``,
    its line being the break's. The file is its base name (``fmt.location``'s rule)."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    return f"{code_name(name)} ({base}:{lineno})" if lineno else f"{code_name(name)} ({base})"


#: ``code_label``'s shape, read back: name (with the resume suffix), base name, line
_LABEL = re.compile(r"^(?P<name>[^()]+?) \((?P<base>[^()/\\:]+)(?::(?P<line>\d+))?\)$")


def label_parts(label: str) -> tuple[str, str, int | None] | None:
    """(function, file base name, line) of a ``code_label`` (a resume function as the function it
    resumes), or None for a label of another shape (``whole graph``, ``parametrization``)."""
    m = _LABEL.match(label)
    if m is None:
        return None
    name = m.group("name").removesuffix(_RESUMED)
    return name, m.group("base"), int(m.group("line")) if m.group("line") else None
