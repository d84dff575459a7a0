"""The key table the derived stack views share: the session's functions first, as
(name, file, line, kind), then the synthetic frames a view adds (user calls, causes, phases)."""

from __future__ import annotations

from collections.abc import Sequence

from dynaprof.model.session import FunctionRef

Key = tuple[str, str, int, str]


class KeyTable:
    def __init__(self, functions: Sequence[FunctionRef]) -> None:
        self.keys: list[Key] = [(f.name, f.filename, f.lineno, f.kind) for f in functions]
        self._index = {k: i for i, k in enumerate(self.keys)}

    def id(self, key: Key) -> int:
        """The index of ``key``, appended when new."""
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.keys)
            self.keys.append(key)
        return i
