"""Fuzzing session.json: whatever the file holds, loading gives a Session or one SessionError,
every renderer copes with whatever loads, and the CLI answers bad files with one line.

Inputs: random bytes, random JSON, and mutations of a valid session (``seed_session()``): keys
deleted, types changed, huge/negative/non-finite numbers, "NaN" strings, deep nesting, list
elements of the wrong type, function indices out of range.
"""

from __future__ import annotations

import copy
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dynaprof.analysis.attribution import apply_attribution
from dynaprof.errors import SessionError
from dynaprof.model import (
    CATEGORIES,
    SCHEMA_VERSION,
    Attempt,
    CaptureInfo,
    CompiledFrame,
    FunctionRef,
    GraphBreak,
    GuardStats,
    InlineStack,
    Location,
    PropertyTrace,
    Samples,
    Session,
    Span,
    Stack,
)
from dynaprof.model.codec import to_json
from dynaprof.model.store import session_from_text, session_to_text
from dynaprof.render.base import RenderContext, RenderOptions
from dynaprof.render.registry import render_all
from tests.conftest import ROOT
from tests.factories import run_info, seed_session
from tests.helpers import JOURNAL

SEED = json.loads(session_to_text(seed_session()))
NO_SAMPLES = json.loads(session_to_text(seed_session(parametrized=False, with_samples=False)))

#: Numbers whose *text* broke Python's json/float before the codec could judge them (fixed: each
#: has its own test below, ``test_integer_*_is_a_session_error``). Kept out of the random
#: mutations so that the fuzzer keeps finding new problems.
HUGE_INT = "1" + "0" * 400  # an integer no float can hold, in a float field
LONG_INT = "1" + "0" * 5000  # more digits than int() converts (sys.get_int_max_str_digits)

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
json_value = st.recursive(
    json_leaf,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)

SPECIAL = [
    None,
    True,
    False,
    0,
    -1,
    -(2**63),
    2**63,
    2**64 + 1,
    10**30,
    -(10**30),
    1e308,
    -1e308,
    5e-324,
    -0.0,
    float("nan"),
    float("inf"),
    float("-inf"),
    "NaN",
    "Infinity",
    "-inf",
    "",
    "0",
    "12",
    "\x00",
    "\ud7ff\ufffe",
    [],
    {},
    [None],
    {"": None},
]


def _deep(depth: int) -> str:
    """A placeholder _dump turns into ``depth`` nested lists (json.dumps itself would recurse)."""
    return f"\x00deep:{depth}"


_DEEP_TOKEN = re.compile(r'"\\u0000deep:(\d+)"')


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any] | None = None) -> Any:
    """A valid session with 1-4 random mutations somewhere in its tree."""
    data: Any = json.loads(json.dumps(SEED if base is None else base))
    for _ in range(draw(st.integers(1, 4))):
        data = _mutate(draw, data)
    return data


def _random_path(draw: st.DrawFn, root: Any, go_on: int) -> tuple[list[Any], Any]:
    """A random path down ``root`` (each step taken unless a draw of 0..go_on is 0), and the value there."""
    path: list[Any] = []
    node = root
    while isinstance(node, (dict, list)) and node and draw(st.integers(0, go_on)) > 0:
        key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else list(range(len(node)))))
        path.append(key)
        node = node[key]
    return path, node


def _parent(root: Any, path: list[Any]) -> Any:
    for key in path[:-1]:
        root = root[key]
    return root


def _mutate(draw: st.DrawFn, root: Any) -> Any:
    # walk down a random path, then change the value found there
    path, node = _random_path(draw, root, 4)
    new = _new_value(draw, node)
    if not path:
        return None if new is _DELETE else new
    parent = _parent(root, path)
    last = path[-1]
    if new is _DELETE:
        del parent[last]
    else:
        parent[last] = new
    return root


_DELETE = object()


def _new_value(draw: st.DrawFn, old: Any) -> Any:
    kind = draw(st.sampled_from(["delete", "special", "random", "retype", "deep", "index", "element", "grow"]))
    if kind == "delete":
        return _DELETE
    if kind == "special":  # a copy: later mutations must not change SPECIAL itself
        return copy.deepcopy(draw(st.sampled_from(SPECIAL)))
    if kind == "random":
        return draw(json_value)
    if kind == "retype":
        return draw(st.sampled_from([str(old), [old], {"v": old}, None, json.dumps(old)]))
    if kind == "deep":
        return _deep(draw(st.sampled_from([50, 500, 5000, 200_000])))
    if kind == "index":  # a function index out of range (or just a big/negative int)
        return draw(st.sampled_from([-1, 10_000, len(SEED["functions"]), 2**31]))
    if kind == "element" and isinstance(old, list):
        out = list(old)
        out.insert(draw(st.integers(0, len(out))), draw(json_leaf))
        return out
    if kind == "grow" and isinstance(old, dict):
        return {**old, draw(st.text(max_size=10)): draw(json_value)}
    return draw(json_leaf)


@st.composite
def retyped(draw: st.DrawFn, base: dict[str, Any] | None = None, finite: bool = True) -> Any:
    """A valid session with 1-6 values replaced by others of the same JSON type (so that it
    mostly still loads): any int, any float, any text, lists shortened, repeated or reordered."""
    data: Any = json.loads(json.dumps(SEED if base is None else base))
    for _ in range(draw(st.integers(1, 6))):
        path, node = _random_path(draw, data, 5)
        if path:
            _parent(data, path)[path[-1]] = draw(_same_type(node, finite))
    return data


def _same_type(old: Any, finite: bool) -> st.SearchStrategy[Any]:
    if isinstance(old, bool):
        return st.booleans()
    if isinstance(old, int):
        return st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from([0, -1, 2**63, -(2**63)])
    if isinstance(old, float):
        return st.floats(allow_nan=not finite, allow_infinity=not finite) | st.integers(-(10**9), 10**9)
    if isinstance(old, str):
        return st.text(max_size=40) | st.sampled_from(["", "\n", "a" * 10_000, "0/0", "0/0#1", "<b>&"])
    if isinstance(old, list):
        return st.sampled_from([[], old[:1], old[::-1], old * 3, old[1:]] if old else [[]])
    if isinstance(old, dict):
        return st.just({k: v for i, (k, v) in enumerate(old.items()) if i % 2}) | st.just(old)
    return st.just(old)


def _loads_or_session_error(text: str) -> Session | None:
    try:
        return session_from_text(text, "fuzz.json")
    except SessionError as e:
        msg = str(e)
        assert msg.startswith("fuzz.json: ") and "\n" not in msg.strip(), msg
        return None


def _dump(data: Any) -> str:
    """JSON text, NaN/Infinity tokens included, deep-nesting placeholders expanded."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=True)
    return _DEEP_TOKEN.sub(lambda m: "[" * int(m.group(1)) + "0" + "]" * int(m.group(1)), text)


# -- (a) loading ----------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_never_crash_the_loader(raw: bytes) -> None:
    _loads_or_session_error(raw.decode("utf-8", errors="replace"))
    _loads_or_session_error(raw.decode("latin-1"))


@settings(max_examples=150, deadline=None)
@given(json_value)
def test_random_json_never_crashes_the_loader(value: Any) -> None:
    _loads_or_session_error(_dump(value))
    if isinstance(value, dict):  # and with a plausible version, so the codec sees it
        _loads_or_session_error(_dump({**value, "schema_version": 1}))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(SEED)), json_value, max_size=len(SEED)))
def test_random_top_level_fields_never_crash_the_loader(fields: dict[str, Any]) -> None:
    _loads_or_session_error(_dump({**fields, "schema_version": 1}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutated(), mutated(NO_SAMPLES)))
def test_mutated_sessions_load_or_fail_with_one_session_error(data: Any) -> None:
    session = _loads_or_session_error(_dump(data))
    if session is not None and not _non_finite(data):  # NaN/Infinity: a known bug, tested below
        _render_everything(session)


def _non_finite(data: Any) -> bool:
    if isinstance(data, float):
        return not math.isfinite(data)
    if isinstance(data, dict):
        return any(_non_finite(v) for v in data.values())
    if isinstance(data, list):
        return any(_non_finite(v) for v in data)
    return False


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_truncated_sessions_fail_with_one_session_error(data: st.DataObject) -> None:
    text = session_to_text(seed_session())
    cut = data.draw(st.integers(0, len(text) - 3))
    assert _loads_or_session_error(text[:cut]) is None


@pytest.mark.parametrize("where", ["compiler", "traced"])
@pytest.mark.parametrize("index", [-1, "n", 10_000])
def test_function_index_out_of_range_is_a_session_error(where: str, index: int | str) -> None:
    data = json.loads(json.dumps(SEED))
    data["samples"]["stacks"][0][where][-1] = len(data["functions"]) if index == "n" else index
    with pytest.raises(SessionError, match=r"refers to function"):
        session_from_text(_dump(data))


@pytest.mark.parametrize("depth", [100, 1000, 100_000])
@pytest.mark.parametrize("where", ["metrics", "name", "top"])
def test_deep_nesting_loads_or_is_a_session_error(depth: int, where: str) -> None:
    data = json.loads(json.dumps(SEED))
    if where == "metrics":
        data["frames"][0]["metrics"]["deep"] = _deep(depth)  # metrics values are Any: may load
    elif where == "name":
        data["frames"][0]["name"] = _deep(depth)
    else:
        data = _deep(depth)
    session = _loads_or_session_error(_dump(data))
    if session is not None:
        _render_everything(session)


def test_integer_beyond_float_range_is_a_session_error() -> None:
    text = session_to_text(seed_session()).replace('"start_s":1.0,', f'"start_s":{HUGE_INT},', 1)
    assert HUGE_INT in text
    with pytest.raises(SessionError):
        session_from_text(text)


def test_integer_with_too_many_digits_is_a_session_error() -> None:
    text = session_to_text(seed_session()).replace('"lineno":11,', f'"lineno":{LONG_INT},', 1)
    assert LONG_INT in text
    with pytest.raises(SessionError):
        session_from_text(text)


# -- (b) every renderer on whatever loads -----------------------------------------------------------


def _render_everything(session: Session, options: RenderOptions | None = None) -> None:
    """What `dynaprof report` does with a session that loaded: attribution, every renderer,
    and saving it again (which must give a file that loads). File names stay in the run folder."""
    apply_attribution(session)
    files = render_all(RenderContext(session, options or RenderOptions(), use_dot=False))
    for name in files:
        parts = Path(name).parts
        assert not Path(name).is_absolute() and ".." not in parts and "\n" not in name, name
    assert "summary.txt" in files and "report.html" in files
    for name in ("trace.json", "speedscope.json"):
        json.loads(files[name])  # type: ignore[arg-type]
    _loads_or_session_error(session_to_text(session))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(retyped(), retyped(NO_SAMPLES)))
def test_renderers_cope_with_any_session_that_loads(data: Any) -> None:
    session = _loads_or_session_error(_dump(data))
    assume(session is not None)
    assert session is not None
    _render_everything(session)


@pytest.mark.parametrize(
    "field, value",
    [
        ("start_s", -1e300),
        ("compile_time_s", 1e300),
        ("compile_time_s", -5.0),
        ("lineno", -(2**63)),
        ("restarts", -3),
        ("guard_count", 2**80),
    ],
)
def test_renderers_cope_with_odd_numbers_in_a_valid_session(field: str, value: Any) -> None:
    data = json.loads(json.dumps(SEED))
    data["frames"][0][field] = value
    session = session_from_text(_dump(data))
    _render_everything(session)


NON_FINITE_CASES = [
    (("frames", 0, "compile_time_s"), float("nan")),
    (("frames", 0, "compile_time_s"), float("inf")),
    (("frames", 0, "compile_time_s"), float("-inf")),
    (("frames", 0, "start_s"), float("nan")),
    (("frames", 0, "spans", 0, "duration_s"), float("nan")),
    (("frames", 0, "properties", 0, "seconds"), float("inf")),
    (("samples", "stacks", 0, "seconds"), float("nan")),
    (("samples", "stacks", 0, "seconds"), float("inf")),
    (("samples", "stacks", 0, "seconds"), float("-inf")),
    (("spans", 0, "duration_s"), float("inf")),
]


def test_non_finite_numbers_are_refused_or_survive_render_and_save() -> None:
    failures = []
    for path, value in NON_FINITE_CASES:
        data = json.loads(json.dumps(SEED))
        node = data
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
        try:
            session = session_from_text(_dump(data))
        except SessionError:
            continue  # refused with one line: fine
        try:
            _render_everything(session)
            session_from_text(session_to_text(session))  # what `dynaprof report` saved must load
        except Exception as e:
            failures.append(f"{'.'.join(map(str, path))}={value}: {type(e).__name__}: {e}")
    assert failures == []


# Sessions built from the model with arbitrary (valid) values: duplicate and path-like frame keys,
# stacks of frames that do not exist, zero/negative/huge times, odd kinds and statuses, options.

KEYS = ["0/0", "0/1", "1/0", "0/0#1", "0/0~2", "!0/0/0", "", ".", "..", "../../../tmp/x", "/abs", "a\nb", "C:\\x"]
key_st = st.sampled_from(KEYS) | st.text(max_size=8)
text_st = st.text(max_size=30) | st.sampled_from(['<img src=x onerror="alert(1)">', "a|b`c", "x" * 500, ""])
num_st = st.floats(min_value=-1e6, max_value=1e9, allow_nan=False) | st.sampled_from([0.0, -0.0, 5e-324, 1e-9])
opt_num = st.none() | num_st
int_st = st.integers(-5, 10**7) | st.sampled_from([2**63, -(2**63)])
opt_int = st.none() | int_st
kind_st = st.sampled_from(["python", "native", "traced", "property"]) | st.text(max_size=6)
category_st = st.sampled_from(list(CATEGORIES)) | st.text(max_size=6)


def _span(draw: st.DrawFn) -> Span:
    name = draw(st.sampled_from(["entire_frame_compile", "bytecode_tracing", "compile_attempt_0", "script"]) | text_st)
    return Span(name, draw(num_st), draw(num_st), draw(int_st), draw(st.dictionaries(text_st, num_st, max_size=2)))


@st.composite
def model_sessions(draw: st.DrawFn) -> tuple[Session, RenderOptions]:
    functions = [
        FunctionRef(draw(text_st), draw(text_st), draw(int_st), draw(kind_st)) for _ in range(draw(st.integers(0, 8)))
    ]
    frames = []
    for _ in range(draw(st.integers(0, 5))):
        key = draw(key_st)
        frames.append(
            CompiledFrame(
                key=key,
                compile_id=draw(st.just(key) | text_st),
                trace_id=draw(st.just(key) | text_st),
                generation=draw(int_st),
                name=draw(text_st),
                filename=draw(text_st),
                lineno=draw(int_st),
                thread=draw(st.sampled_from([1, 2]) | int_st),
                thread_name=draw(text_st),
                start_s=draw(num_st),
                compile_time_s=draw(opt_num),
                status=draw(st.sampled_from(["ok", "failed", "unfinished"]) | text_st),
                restarts=draw(int_st),
                restart_reasons=draw(st.lists(text_st, max_size=3)),
                attempts=[Attempt(draw(int_st), draw(opt_num), draw(opt_num)) for _ in range(draw(st.integers(0, 3)))],
                graph_breaks=draw(int_st),
                graph_break_reasons=[
                    GraphBreak(draw(text_st), draw(st.none() | text_st), draw(opt_int))
                    for _ in range(draw(st.integers(0, 3)))
                ],
                recompile_reason=draw(st.none() | text_st),
                guard_count=draw(opt_int),
                guards=GuardStats(
                    count=draw(opt_int),
                    tree_leaf_count=draw(opt_int),
                    tree_depth=draw(opt_int),
                    code_text_chars=draw(opt_int),
                    latency_us=draw(opt_num),
                    sources=draw(st.dictionaries(text_st, int_st, max_size=3)),
                ),
                graph_op_count=draw(opt_int),
                ir_count=draw(opt_int),
                inlined_calls=draw(opt_int),
                phases=draw(st.dictionaries(text_st | st.just("bytecode_tracing"), num_st, max_size=4)),
                spans=[_span(draw) for _ in range(draw(st.integers(0, 3)))],
                fail_type=draw(st.none() | text_st),
                fail_reason=draw(st.none() | text_st),
                call_site=[
                    Location(draw(text_st), draw(text_st), draw(int_st)) for _ in range(draw(st.integers(0, 2)))
                ],
                properties=[
                    PropertyTrace(
                        draw(text_st),
                        draw(text_st),
                        draw(text_st),
                        draw(text_st),
                        draw(int_st),
                        draw(st.booleans()),
                        draw(int_st),
                        draw(int_st),
                        draw(num_st),
                    )
                    for _ in range(draw(st.integers(0, 3)))
                ],
                cprofile=draw(st.none() | text_st),
                metrics=draw(st.dictionaries(text_st, json_leaf, max_size=3)),
            )
        )
    frame_keys = [f.key for f in frames]
    samples = None
    if draw(st.booleans()):
        index = st.integers(0, max(len(functions) - 1, 0))
        stacks = [
            Stack(
                draw(st.sampled_from(frame_keys) if draw(st.booleans()) and frame_keys else st.none() | key_st),
                draw(int_st),
                draw(st.sampled_from([1, 2]) | int_st),
                draw(st.lists(index, max_size=6 if functions else 0)),
                draw(st.lists(index, max_size=6 if functions else 0)),
                draw(int_st),
                draw(num_st),
            )
            for _ in range(draw(st.integers(0, 6)))
        ]
        samples = Samples(
            draw(st.sampled_from(["builtin", "py-spy"]) | text_st),
            draw(num_st),
            draw(opt_num),
            draw(int_st),
            draw(num_st),
            draw(int_st),
            stacks,
        )
    inline = None
    if draw(st.booleans()) and functions:
        index = st.integers(0, len(functions) - 1)
        inline = [
            InlineStack(draw(st.none() | key_st), draw(st.lists(index, max_size=5)), draw(int_st), draw(num_st))
            for _ in range(draw(st.integers(0, 4)))
        ]
    session = Session(
        SCHEMA_VERSION,
        run_info(
            target=draw(text_st),
            end_reason=draw(st.sampled_from(["exited", "exception", "interrupted", "signal", "lost"]) | text_st),
            complete=draw(st.booleans()),
            exit_status=draw(opt_int),
            wall_s=draw(opt_num),
            torch_version=draw(st.none() | text_st),
            device=draw(st.none() | text_st),
            start_time=draw(st.just("") | text_st | st.just("2026-11-30T12:00:00+00:00")),
        ),
        CaptureInfo(
            sampler=draw(st.sampled_from(["builtin", "py-spy", "none"]) | text_st),
            requested_hz=draw(opt_num),
            source=draw(st.sampled_from(["live", "torch_trace"]) | text_st),
            warnings=draw(st.lists(text_st, max_size=2)),
        ),
        frames=frames,
        functions=functions,
        samples=samples,
        inline_profile=inline,
        attribution=draw(st.dictionaries(category_st, num_st, max_size=3)),
        spans=[_span(draw) for _ in range(draw(st.integers(0, 2)))],
        artifacts=draw(st.dictionaries(st.sampled_from(["cprofile", "pyspy_trace"]) | text_st, text_st, max_size=2)),
    )
    options = RenderOptions(
        min_width=draw(st.sampled_from([0.0, 0.001, 0.5, 0.999])),
        icicle=draw(st.booleans()),
        node_threshold=draw(st.sampled_from([0.0, 0.005, 0.9])),
        edge_threshold=draw(st.sampled_from([0.0, 0.001, 0.9])),
        collapse_torch=draw(st.booleans()),
        max_rows=draw(st.sampled_from([1, 2, 25, 1000])),
    )
    return session, options


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(model_sessions())
def test_renderers_cope_with_arbitrary_valid_sessions(case: tuple[Session, RenderOptions]) -> None:
    built, options = case
    session = session_from_text(session_to_text(built))  # valid by construction: it must load
    _render_everything(session, options)


# -- (c) the CLI on fuzzed files: one line, exit status 2 ---------------------------------------------


def _report(tmp: Path, text: str) -> subprocess.CompletedProcess[str]:
    run = tmp / "run"
    run.mkdir(exist_ok=True)
    (run / "session.json").write_text(text, encoding="utf-8")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "dynaprof", "report", "-q", "run"],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_cli_answers_a_fuzzed_session_with_one_line(tmp_path: Path, data: Any) -> None:
    text = _dump(data)
    loads = _loads_or_session_error(text) is not None
    proc = _report(tmp_path, text)
    assert "Traceback" not in proc.stderr, proc.stderr
    if loads:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("dynaprof: error: "), proc.stderr


@pytest.mark.parametrize(
    "text",
    [
        "\x00\xff garbage",
        '{"schema_version": 1, "run": [], "capture": {}}',
        _dump(_deep(100_000)),
        session_to_text(seed_session()).replace('"lineno":11,', '"lineno":"11",', 1),
    ],
    ids=["bytes", "wrong-type", "deep", "string-for-int"],
)
def test_cli_on_a_bad_session_is_one_line_and_status_2(tmp_path: Path, text: str) -> None:
    proc = _report(tmp_path, text)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_non_finite_tokens_anywhere_are_refused() -> None:
    """NaN/Infinity are not JSON; even inside free-form metrics they would be written back as
    null and surprise every other reader, so the loader refuses them with one line."""
    data = json.loads(json.dumps(SEED))
    data["frames"][0]["metrics"]["x"] = [float("inf"), {"y": float("nan")}]
    with pytest.raises(SessionError, match="Infinity is not a number JSON allows"):
        session_from_text(_dump(data))
    json.dumps(to_json(session_from_text(json.dumps(SEED))), allow_nan=False)


# -- (d) the capture journal: what `dynaprof report RUN` rebuilds from after a crash --------------------



def _assemble_text(tmp: Path, text: str) -> Session:
    from dynaprof.capture.journal import read_journal
    from dynaprof.ingest.assemble import ParentFacts, assemble

    path = tmp / "journal.jsonl"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    facts = ParentFacts(command=["dynaprof", "report", str(tmp)], exit_status=None, run_dir=str(tmp))
    return assemble((r for _, r in read_journal(path)), facts)


def _journal_text(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(0, len(_journal_text(JOURNAL))),
    st.sampled_from(["", "\x00" * 64, "\x00" * 4096, "{garbage", '{"t": "span"', "\n\n\ufffd\n"]),
    st.sets(st.integers(0, len(JOURNAL) - 1), max_size=4),
)
def test_a_torn_or_damaged_journal_still_assembles(tmp_path: Path, cut: int, tail: str, dropped: set[int]) -> None:
    """What a crash, a kill or a power cut leaves: a journal cut anywhere, a tail of NULs or
    garbage, lines missing. The rebuilt session must validate, render and save."""
    records = [r for i, r in enumerate(JOURNAL) if i not in dropped]
    text = _journal_text(records)[:cut] + tail
    session = _assemble_text(tmp_path, text)
    again = session_from_text(session_to_text(session))  # what report saves must load
    _render_everything(again)


def test_the_whole_journal_assembles_into_the_expected_session(tmp_path: Path) -> None:
    s = _assemble_text(tmp_path, _journal_text(JOURNAL))
    assert [f.key for f in s.frames] == ["0/0", "1/0"]
    assert s.frames[0].restarts == 1 and s.frames[0].graph_breaks == 1 and s.frames[1].status == "unfinished"
    assert s.run.complete and s.samples is not None and s.samples.count == 33


MALFORMED = [
    (12, "m", ["not", "a", "dict"]),
    (12, "m", {"entire_frame_compile_time_s": "slow", "guard_count": True, "restart_reasons": "x"}),
    (13, "graph_breaks", float("inf")),
    (13, "inlines", [1, 2]),
    (1, "version", ["2", "13"]),
    (0, "tid", "main"),
    (0, "pid", "seven"),
    (0, "argv", 7),
    (18, "seconds", {"s": 1}),
    (18, "requested_hz", "fast"),
    (4, "ts", float("nan")),
    (3, "tid", float("inf")),
    (19, "tree_depth", True),
    (21, "device", {"cuda": 0}),
]


def test_malformed_journal_records_are_skipped_not_fatal(tmp_path: Path) -> None:
    failures = []
    for index, field, value in MALFORMED:
        records = json.loads(json.dumps(JOURNAL))
        records[index][field] = value
        try:
            session = _assemble_text(tmp_path, _journal_text(records))
            session_from_text(session_to_text(session))
        except Exception as e:
            failures.append(f"{records[index]['t']}.{field}={value!r}: {type(e).__name__}: {e}"[:200])
    assert failures == []
