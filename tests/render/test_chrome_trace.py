"""trace.json: valid Chrome trace events, strictly nested per thread, in microseconds."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dynaprof.model import Attempt, Span
from dynaprof.render.base import RenderContext
from dynaprof.render.chrome_trace import LEVEL_SPAN, Interval, chrome_trace, nest, render_chrome_trace
from tests.factories import frame, make_session, seed_session


def load(session: Any) -> dict[str, Any]:
    files = render_chrome_trace(RenderContext(session))
    assert list(files) == ["trace.json"]
    text = files["trace.json"]
    assert isinstance(text, str)
    return json.loads(text)  # type: ignore[no-any-return]


def assert_well_nested(events: list[dict[str, Any]]) -> None:
    """B/E pairs match with stack discipline and X events nest, per (pid, tid)."""
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in events:
        if e["ph"] in ("B", "E", "X"):
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_thread.values():
        stack: list[dict[str, Any]] = []
        for e in evs:
            if e["ph"] == "B":
                stack.append(e)
            elif e["ph"] == "E":
                assert stack and stack[-1]["name"] == e.get("name", stack[-1]["name"]), e
                assert e["ts"] >= stack.pop()["ts"]
        assert not stack, "unclosed B events"
        xs = sorted((e for e in evs if e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"]))
        open_ends: list[float] = []
        for e in xs:
            assert e["dur"] > 0, e
            while open_ends and open_ends[-1] <= e["ts"]:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends:
                assert end <= open_ends[-1] + 1e-6, f"{e['name']} overlaps its parent"
            open_ends.append(end)


def test_seed_trace() -> None:
    data = load(seed_session())
    assert data["displayTimeUnit"] == "ms"
    events = data["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    assert {e["name"] for e in meta} >= {"process_name", "thread_name"}
    assert any(e["args"]["name"] == "MainThread" for e in meta if e["name"] == "thread_name")
    xs = {e["name"]: e for e in events if e["ph"] == "X"}
    assert set(xs) == {"script", "0/0 forward", "entire_frame_compile", "bytecode_tracing", "build_guards"}
    f = xs["0/0 forward"]
    assert f["ts"] == 1_000_000 and f["dur"] == 1_200_000  # microseconds
    assert f["args"]["compile_id"] == "0/0" and f["args"]["guards"] == 2639 and f["args"]["restarts"] == 0
    assert xs["script"]["dur"] == 5_000_000
    assert xs["bytecode_tracing"]["args"]["compile_id"] == "0/0"
    assert_well_nested(events)


def test_overlapping_spans_are_clipped_and_empty_ones_dropped() -> None:
    f = frame("0/0", start_s=1.0, compile_time_s=1.0, spans=[
        Span("entire_frame_compile", 0.9999, 1.0002, 1),  # starts before, ends after the frame
        Span("a", 1.1, 0.5, 1),
        Span("b", 1.5, 0.3, 1),  # overlaps the end of "a"
        Span("zero", 1.2, 0.0, 1),
        Span("negative", 1.3, -0.1, 1),
        Span("outside", 3.0, 1.0, 1),
    ])
    data = load(make_session([f]))
    xs = [e for e in data["traceEvents"] if e["ph"] == "X"]
    names = {e["name"] for e in xs}
    assert "zero" not in names and "negative" not in names and "outside" not in names
    b = next(e for e in xs if e["name"] == "b")
    assert b["ts"] == 1_500_000 and b["dur"] == 100_000  # clipped to "a", which ends at 1.6 s
    assert b["args"]["clipped_us"] == 200_000
    efc = next(e for e in xs if e["name"] == "entire_frame_compile")
    assert efc["ts"] == 1_000_000 and efc["dur"] == 1_000_000
    assert_well_nested(data["traceEvents"])


def test_threads_attempts_and_unfinished_frames() -> None:
    f1 = frame("0/0", thread=1, thread_name="MainThread", start_s=0.5, compile_time_s=1.0, restarts=1,
               restart_reasons=["restart <reason>"], attempts=[Attempt(0, 0.5, 0.4), Attempt(1, 0.9, 0.6)],
               spans=[Span("bytecode_tracing", 0.5, 0.4, 1), Span("bytecode_tracing", 0.9, 0.5, 1)])
    f2 = frame("1/0", thread=7, thread_name="worker", start_s=0.7, compile_time_s=None, status="unfinished",
               attempts=[], spans=[Span("entire_frame_compile", 0.7, 0.2, 7)])
    s = make_session([f1, f2])
    s.spans = [Span("script", 0.0, 3.0, 1)]
    data = load(s)
    events = data["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert threads == {1: "MainThread", 7: "worker"}
    xs = [e for e in events if e["ph"] == "X"]
    assert {e["name"] for e in xs if e["tid"] == 1} >= {"attempt 0 (restarted)", "attempt 1", "0/0 forward"}
    unfinished = next(e for e in xs if e["name"] == "1/0 forward")
    assert unfinished["dur"] == 200_000 and unfinished["args"]["status"] == "unfinished"
    assert next(e for e in xs if e["name"] == "0/0 forward")["args"]["restart_reasons"] == ["restart <reason>"]
    assert_well_nested(events)


def test_empty_session() -> None:
    data = load(make_session([]))
    assert [e["ph"] for e in data["traceEvents"]] == ["M"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(-5, 30), st.integers(0, 3)), max_size=30))
def test_nest_property(raw: list[tuple[int, int, int]]) -> None:
    ivs = [Interval(f"e{i}", float(a), float(a + d), 1, lvl, "c") for i, (a, d, lvl) in enumerate(raw)]
    out = nest(ivs)
    events = [{"ph": "X", "pid": 1, "tid": 1, "name": iv.name, "ts": iv.start_us, "dur": iv.end_us - iv.start_us}
              for iv in out]
    assert_well_nested(events)
    originals = {iv.name: iv for iv in ivs}
    for iv in out:  # only ever shortened, never moved or grown
        o = originals[iv.name]
        assert iv.start_us == o.start_us and iv.end_us <= o.end_us
    # an interval that nests in nothing partial is kept whole
    if not raw:
        assert out == []
    assert all(iv.level <= LEVEL_SPAN for iv in out)


def test_non_finite_numbers_never_reach_the_json() -> None:
    """A session can hold an infinite float (json.loads reads ``Infinity``); trace.json stays valid
    JSON (no ``Infinity``), without the events that cannot be placed. Found by the fuzz test."""
    s = seed_session()
    s.frames[0].compile_time_s = float("inf")
    s.frames[0].metrics["window_s"] = float("nan")
    s.spans.append(Span("bad", float("inf"), 1.0, 1))
    text = str(render_chrome_trace(RenderContext(s))["trace.json"])
    assert "Infinity" not in text and "NaN" not in text
    events = json.loads(text)["traceEvents"]
    assert all(e.get("name") != "bad" for e in events)
    assert any(e.get("ph") == "X" for e in events)  # the rest is still drawn
    # the file is the walked trace's, as when every value is checked before encoding
    assert text == json.dumps(chrome_trace(s), ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
