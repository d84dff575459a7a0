"""Hand-built sweeps for the growth, renderer and CLI tests (no torch): each run's measures follow a
known power law, with multiplicative noise from a seeded generator."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from dynaprof.model.sweep import SWEEP_SCHEMA_VERSION, PointRun, Sweep, SweepParam, SweepPoint

Law = Callable[[float], float | None]


def make_sweep(times: dict[str, Law], counts: dict[str, Callable[[float], int | None]] | None = None,
               xs: Sequence[float] = (4, 8, 16, 32), repeat: int = 3, noise: float = 0.05, seed: int = 0,
               axis: str = "LAYERS") -> Sweep:
    """A sweep whose run at N has ``times[m](N)`` seconds of measure ``m`` (None: absent), times
    a factor in [1 - noise, 1 + noise], and the exact ``counts[c](N)``."""
    rng = random.Random(seed)
    points = []
    for x in xs:
        runs = []
        for r in range(1, repeat + 1):
            measures = {}
            for m, law in times.items():
                v = law(x)
                if v is not None:
                    measures[m] = v * rng.uniform(1 - noise, 1 + noise)
            cs = {c: v for c, law in (counts or {}).items() if (v := law(x)) is not None}
            runs.append(PointRun(r, f"{axis}-{x:g}/{r}", 0, None, 1.0, measures, cs))
        points.append(SweepPoint({axis: f"{x:g}"}, float(x), runs))
    return Sweep(SWEEP_SCHEMA_VERSION, [SweepParam(axis, [f"{x:g}" for x in xs])], "model.py", ["--layers", "{LAYERS}"],
                 ["dynaprof", "sweep"], repeat, True, "2026-12-05T12:00:00+00:00", "2.13.0+cpu", "0.1.0",
                 points)


def restart_sweep(restart_k: float = 2.0, seed: int = 0) -> Sweep:
    """The seed's story: restart waste grows as N^``restart_k``, the rest linearly."""
    return make_sweep(
        {"total": lambda n: 0.1 * n + 0.002 * n ** restart_k,
         "cause:whole graph": lambda n: 0.1 * n,
         "cause:parametrization": lambda n: 0.002 * n ** restart_k,
         "restart_waste": lambda n: 0.002 * n ** restart_k,
         "group:dynamo_tracing": lambda n: 0.08 * n + 0.002 * n ** restart_k,
         "group:guard_building": lambda n: 0.02 * n},
        {"guards": lambda n: int(10 * n), "restarts": lambda n: int(n),
         "inlined_calls_discarded": lambda n: int(n * n)},
        seed=seed)
