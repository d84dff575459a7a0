"""Call paths sorted by byte keys: the order tuples give, and the runs a bisection finds."""

from __future__ import annotations

import random
from bisect import bisect_right

from dynaprof.analysis.paths import group_end, order_by_path, path_keys, sort_by_path


def test_paths_sort_as_tuples_do() -> None:
    # byte keys order the paths as tuples would: a prefix first, then by each index in turn
    paths = [[3, 1], [3], [2, 70000, 1], [2, 300], [], [3, 1], [0, 2**32 - 1], [2, 256]]
    assert order_by_path(paths) == sorted(range(len(paths)), key=lambda i: tuple(paths[i]))
    assert path_keys([[-1, 2]]) is None
    mixed = [[-2], [1], [-1, 0], [0]]
    assert order_by_path(mixed) == sorted(range(len(mixed)), key=lambda i: tuple(mixed[i]))


def test_group_end_finds_the_run_a_key_function_bisection_finds() -> None:
    rng = random.Random(1)
    paths = [[rng.choice([0, 1, 255, 256, 70000]) for _ in range(rng.randint(1, 5))] for _ in range(300)]
    order, keys = sort_by_path(paths)
    assert keys is not None
    rows = [tuple(paths[i]) for i in order]
    for j in range(len(rows)):
        for depth in range(len(rows[j])):
            lo = j
            while lo and rows[lo - 1][:depth] == rows[j][:depth]:
                lo -= 1
            hi = lo
            while hi < len(rows) and rows[hi][:depth] == rows[j][:depth]:
                hi += 1
            if any(len(r) <= depth for r in rows[j:hi]):
                continue
            want = bisect_right(rows, rows[j][: depth + 1], lo=j, hi=hi, key=lambda r: r[: depth + 1])
            assert group_end(keys, j, hi, depth) == want
