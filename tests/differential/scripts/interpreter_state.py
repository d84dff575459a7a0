"""What the interpreter gives the script: the same under ``dynaprof run`` as under ``python``.

Its argv, ``__main__``, ``sys.path``, the environment's ``PYTHONPATH``, how many frames lie under
it (the child starts as ``python script.py`` itself: see docs/performance.md, "Where the script's
frames start"), and no variable of dynaprof's left in the environment; then a compile.
"""

from __future__ import annotations

import inspect
import os
import sys

import torch

print("argv", sys.argv)
print("main", __name__, __spec__, os.path.basename(__file__))
print("path", sys.path)
print("PYTHONPATH", os.environ.get("PYTHONPATH"))
print("frames under the script", len(inspect.stack()) - 1)
print("dynaprof variables", sorted(k for k in os.environ if k.startswith("DYNAPROF")))
print("flags", sys.flags)
f = torch.compile(lambda x: (x * 2).sum(), backend="eager")
print("result", f(torch.arange(3.0)).item())
