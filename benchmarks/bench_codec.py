"""The session decoder (``model/codec.py``, behind ``model.store.load_session``) against msgspec.

Issue #34 asks whether a typed, fast library should replace the hand-written decoder. On the
big synthetic session (``bench_scale``'s largest case: 10,000 frames, 1,000,000 samples in
100,000 stacks) this times, best of ``--rounds``, in one process:

* ``load_session``: today's path (``json.loads``, then the typed checks and dataclasses);
* ``json.loads``: the parse alone, the floor of any decoder built on the standard library;
* with msgspec importable (``PYTHONPATH=DIR`` after ``pip install --target DIR msgspec``; it is
  not a dependency): ``msgspec.json.decode`` to plain values, the same then ``codec.from_json``
  (msgspec as the parser only), and ``msgspec.json.decode(type=Session)`` (msgspec builds and
  checks the dataclasses itself) where it accepts the model's annotations.

    .venv/bin/python benchmarks/bench_codec.py [--scale 1.0] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynaprof.model.codec import from_json  # noqa: E402
from dynaprof.model.session import Session  # noqa: E402
from dynaprof.model.store import SESSION_FILE, _unnest_axes, collector_paused, load_session  # noqa: E402


def best(fn: Callable[[], Any], rounds: int) -> float:
    """Seconds of the fastest of ``rounds`` calls, each with the cyclic collector paused as
    ``load_session`` pauses it (so every decoder is timed alike)."""
    times = []
    for _ in range(rounds):
        gc.collect()
        with collector_paused():
            start = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - start)
        del out
    return min(times)


def _unnested(data: Any) -> Any:
    _unnest_axes(data)
    for frame in data.get("frames") or []:
        _unnest_axes(frame)
    return data


def measure(path: Path, rounds: int) -> dict[str, float | str]:
    raw = path.read_bytes()
    out: dict[str, float | str] = {"size_mb": round(len(raw) / 1e6, 1)}
    out["load_session"] = best(lambda: load_session(path), rounds)
    out["json.loads"] = best(lambda: json.loads(raw), rounds)
    try:
        import msgspec
    except ImportError:
        out["msgspec"] = "not installed"
        return out
    out["msgspec.json.decode"] = best(lambda: msgspec.json.decode(raw), rounds)
    out["msgspec parse + codec.from_json"] = best(
        lambda: from_json(Session, _unnested(msgspec.json.decode(raw))), rounds)  # fmt: skip
    try:
        typed = msgspec.json.Decoder(Session)
        out["msgspec typed (type=Session)"] = best(lambda: typed.decode(raw), rounds)
    except (TypeError, msgspec.ValidationError) as e:
        out["msgspec typed (type=Session)"] = f"refused: {str(e)[:160]}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_scale import saved_case  # the same session bench_scale renders

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        saved_case(args.scale, folder)
        results = measure(folder / SESSION_FILE, args.rounds)
    print(f"| decoder (scale {args.scale:g}, best of {args.rounds}) | seconds |")
    print("|---|---|")
    for name, value in results.items():
        print(f"| {name} | {value:.2f} |" if isinstance(value, float) else f"| {name} | {value} |")


if __name__ == "__main__":
    main()
