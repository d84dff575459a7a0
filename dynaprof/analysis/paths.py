"""Sorting call paths (sequences of function or frame indices) quickly.

A big session has 100,000 stacks 30-70 frames deep that share long prefixes, and several outputs
sort them (speedscope's profiles, the pruned flamegraph trees). Comparing tuples of ints walks
the shared prefix element by element in Python objects; the same paths packed as fixed-width
big-endian bytes compare with one ``memcmp`` each, in the same order: the first differing
element decides both ways, and a prefix sorts before the paths it starts."""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Callable, Sequence


def path_keys(paths: Sequence[Sequence[int]]) -> list[bytes] | None:
    """Byte keys that sort as the ``paths`` do (as tuples), and are equal where they are; None
    where a path holds an index outside 0 .. 2**32-1 (a negative synthetic id), which only a
    tuple comparison orders."""
    packers: dict[int, Callable[..., bytes]] = {}

    def packer(n: int) -> Callable[..., bytes]:
        packers[n] = struct.Struct(f">{n}I").pack
        return packers[n]

    try:
        return [(packers.get(len(p)) or packer(len(p)))(*p) for p in paths]
    except struct.error:
        return None


def order_by_path(paths: Sequence[Sequence[int]]) -> list[int]:
    """The indices of ``paths`` in the order ``sorted`` gives them as tuples, stable (equal paths
    keep their order), whatever the paths' sequence type."""
    return sort_by_path(paths)[0]


def sort_by_path(paths: Sequence[Sequence[int]]) -> tuple[list[int], list[bytes] | None]:
    """:func:`order_by_path`, and the byte keys of the paths in that order (None where
    :func:`path_keys` gives none)."""
    keys = path_keys(paths)
    if keys is None:
        tuples = [tuple(p) for p in paths]
        return sorted(range(len(paths)), key=tuples.__getitem__), None
    order = sorted(range(len(paths)), key=keys.__getitem__)
    return order, [keys[i] for i in order]


def group_end(keys: list[bytes], j: int, hi: int, depth: int) -> int | None:
    """Where the run of sorted ``keys[j:hi]`` that share ``keys[j]``'s first ``depth + 1``
    indices ends, given that all of ``keys[j:hi]`` share the first ``depth`` and that each has
    more than ``depth``: the first key from the next index at ``depth`` on, found by a plain
    bisection (no key function). None when that index would overflow the key's width."""
    head = int.from_bytes(keys[j][4 * depth:4 * depth + 4], "big")
    if head + 1 >= 1 << 32:
        return None
    return bisect_left(keys, keys[j][:4 * depth] + (head + 1).to_bytes(4, "big"), j, hi)
