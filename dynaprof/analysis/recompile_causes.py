"""Why a function was recompiled, in the user's terms: the one rule that reads a failed guard's
text (torch's recompile reason, live or from a TORCH_TRACE log) and names the cause behind it.

* A guard on a parametrized module: ``nn.utils.parametrize`` gives every parametrized module a
  class of its own (``ParametrizedConv1d``, made per instance), so the type guard Dynamo puts on
  ``self._modules['conv']`` fails for each instance, and a function called on N such modules is
  compiled N times. A guard on a parametrization's tensors (``parametrizations``, ``original``)
  is the parametrization's too.
* A size guard (``size mismatch at index 0``): the dimension that changed, for ``mark_dynamic``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dynaprof.model.session import CAUSE_PARAMETRIZATION

#: why a parametrized module's type guard fails, as every page says it
PER_INSTANCE_CLASS = "each parametrized module has its own class, so Dynamo's type guard fails per instance"
PARAMETRIZED_TENSORS = "a guard on a parametrization's tensors failed"
SIZES = "sizes"

_PARAMETRIZED_CLASS = re.compile(r"\bParametrized[A-Z]\w*")
_PARAMETRIZED_SOURCE = re.compile(r"""parametrizations\b|\['original\d*'\]|\.original\d*\b""")
_SIZE = re.compile(r"tensor '(?P<name>.+?)' (?P<what>size|stride) mismatch(?: at index (?P<dim>\d+))?")
# a guard source such as L['x'] or L['self']._modules['conv']: the name a person wrote
_LOCAL = re.compile(r"""^L\[['"](?P<name>[^'"]+)['"]\]$""")


@dataclass(frozen=True)
class RecompileCause:
    #: the cause key (``CAUSE_PARAMETRIZATION``) or ``SIZES``
    cause: str
    #: why, in a clause: PER_INSTANCE_CLASS, or ``x changed size in dimension 0``
    why: str
    #: the class a per-instance type guard failed on, where the reason names it
    cls: str | None = None


def recompile_cause(reason: str | None) -> RecompileCause | None:
    """The cause behind one recompile reason, or None when the rule knows none."""
    if not reason:
        return None
    cls = _PARAMETRIZED_CLASS.search(reason)
    if cls is not None:  # only a type or identity guard names a module's class
        return RecompileCause(CAUSE_PARAMETRIZATION, PER_INSTANCE_CLASS, cls.group(0))
    if _PARAMETRIZED_SOURCE.search(reason.split("\n", 1)[0]):
        return RecompileCause(CAUSE_PARAMETRIZATION, PARAMETRIZED_TENSORS)
    size = _SIZE.search(reason)
    if size is not None:
        name = size.group("name")
        local = _LOCAL.match(name)
        dim = f" in dimension {size.group('dim')}" if size.group("dim") else ""
        return RecompileCause(SIZES, f"{local.group('name') if local else name} changed {size.group('what')}{dim}")
    return None
