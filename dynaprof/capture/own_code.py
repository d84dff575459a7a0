"""Which source files are dynaprof's own: one rule for the samplers and the call sites.

By where the package is installed (as given and resolved), not by a folder name: a user's checkout
of this repository is itself a ``dynaprof/`` folder, and its samples are user code. Every file
under the package counts, the hooks' wrappers in ``capture/hooks/`` included: they sit on Dynamo's
stack between torch's frames and are not what the compile spent its time on.
"""

from __future__ import annotations

import os

#: the package folder, with a trailing slash, as imported and with links resolved
PACKAGE_DIRS: tuple[str, ...] = tuple(
    {
        p.replace("\\", "/") + "/"
        for p in (
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            os.path.dirname(os.path.dirname(os.path.realpath(__file__))),
        )
    }
)


def own_file(filename: str) -> bool:
    """Whether ``filename`` (a code object's ``co_filename``) is one of dynaprof's own files."""
    f = filename.replace("\\", "/")
    if f.startswith(PACKAGE_DIRS):
        return True
    # a relative co_filename (a module run from the package folder) resolves against the cwd
    if os.path.isabs(f) or f.startswith("<"):
        return False
    return os.path.abspath(f).replace("\\", "/").startswith(PACKAGE_DIRS)
