"""Session model: JSON round trip, schema checks, and one-line errors for bad files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from dynaprof.errors import SessionError
from dynaprof.model import SCHEMA_VERSION, load_session, save_session
from dynaprof.model.codec import to_json
from dynaprof.model.session import outermost_frames
from dynaprof.model.store import session_from_text, session_to_text
from tests.factories import frame, make_session, seed_session


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    s = seed_session()
    save_session(s, tmp_path)
    assert load_session(tmp_path) == s
    assert load_session(tmp_path / "session.json") == s


def test_required_frame_keys_are_present() -> None:
    data = json.loads(session_to_text(seed_session()))
    assert data["schema_version"] == SCHEMA_VERSION
    for key in ("command", "torch_version", "python_version", "device", "start_time", "exit_status"):
        assert key in data["run"]
    f = data["frames"][0]
    for key, typ in (
        ("compile_id", str),
        ("name", str),
        ("filename", str),
        ("lineno", int),
        ("compile_time_s", float),
        ("restarts", int),
        ("restart_reasons", list),
        ("graph_breaks", int),
        ("guard_count", int),
        ("phases", dict),
    ):
        assert isinstance(f[key], typ), key
    assert "dynamo_tracing" in data["attribution"] and "parametrization" in data["attribution"]["causes"]
    assert "dynamo_tracing" in f["attribution"] and "parametrization" in f["attribution"]["causes"]


def test_unknown_stays_null() -> None:
    s = make_session([frame("0/0", guard_count=None, compile_time_s=None)])
    data = json.loads(session_to_text(s))
    assert data["frames"][0]["guard_count"] is None
    assert data["frames"][0]["compile_time_s"] is None


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    save_session(seed_session(), tmp_path)
    save_session(seed_session(False), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.json"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "not valid JSON"),
        ('{"schema_version": 1, "run": ', "not valid JSON"),
        ("[1, 2]", "not a dynaprof session"),
        ('{"schema_version": "1"}', "schema_version must be an integer"),
        ('{"schema_version": 99}', "newer dynaprof"),
        ('{"schema_version": 0}', "unknown schema_version"),
    ],
)
def test_bad_files_give_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(SessionError) as exc:
        session_from_text(text, "x/session.json")
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)
    assert str(exc.value).startswith("x/session.json")


def test_wrong_types_name_the_field() -> None:
    data = to_json(seed_session())
    data["frames"][0]["restarts"] = "three"
    with pytest.raises(SessionError, match=r"frames\[0\]\.restarts: expected an integer"):
        session_from_text(json.dumps(data))
    data = to_json(seed_session())
    del data["frames"][0]["compile_id"]
    with pytest.raises(SessionError, match=r"frames\[0\]\.compile_id: missing"):
        session_from_text(json.dumps(data))


def test_out_of_range_function_index_is_rejected() -> None:
    data = to_json(seed_session())
    data["samples"]["stacks"][0]["compiler"].append(10_000)
    with pytest.raises(SessionError, match="refers to function 10000"):
        session_from_text(json.dumps(data))


def test_missing_file_and_unreadable_folder(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="no such file"):
        load_session(tmp_path / "nope")


def test_outermost_frames_do_not_double_count_nested_compiles() -> None:
    outer = frame("0/0", start_s=1.0, compile_time_s=2.0, thread=1)
    inner = frame("1/0", start_s=1.5, compile_time_s=0.5, thread=1)
    other = frame("2/0", start_s=1.5, compile_time_s=0.5, thread=2)
    s = make_session([outer, inner, other])
    assert {f.key for f in outermost_frames(s.frames)} == {"0/0", "2/0"}
    assert s.total_compile_s == pytest.approx(2.5)


def test_the_kept_outermost_frames_follow_every_change_that_moves_them() -> None:
    outer = frame("0/0", start_s=1.0, compile_time_s=2.0, thread=1)
    inner = frame("1/0", start_s=1.5, compile_time_s=0.5, thread=1)
    s = make_session([outer, inner])

    def keys() -> list[str]:
        got = [f.key for f in s.outermost_frames()]
        assert got == [f.key for f in outermost_frames(s.frames)]  # the kept answer is the fresh one
        return got

    assert keys() == ["0/0"] and s.total_compile_s == 2.0
    inner.start_s = 5.0  # no longer inside 0/0
    assert keys() == ["0/0", "1/0"] and s.total_compile_s == 2.5
    inner.thread = 2
    inner.start_s = 1.5
    assert keys() == ["0/0", "1/0"]
    inner.thread, outer.compile_time_s = 1, None  # unknown: 0/0 no longer covers it
    assert keys() == ["0/0", "1/0"] and s.total_compile_s == 0.5
    s.frames.append(frame("2/0", start_s=9.0, compile_time_s=1.0, thread=1, kind="backward"))
    assert keys() == ["0/0", "1/0", "2/0"] and s.compile_by_kind() == {"forward": 0.5, "backward": 1.0}
    s.frames = [frame("3/0", start_s=0.0, compile_time_s=4.0, thread=1)]
    assert keys() == ["3/0"] and s.total_compile_s == 4.0
    s.outermost_frames().clear()  # a copy: the caller's list is its own
    assert keys() == ["3/0"]
    assert "_outermost" not in to_json(s)  # kept beside the session, never saved


def test_a_decode_error_names_an_odd_key_on_one_line() -> None:
    """A dict key with a newline is quoted in the error's path, so the error stays one line."""
    import pytest

    from dynaprof.model.codec import DecodeError, from_json, to_json
    from dynaprof.model.session import CompiledFrame
    from tests.factories import frame

    data = to_json(frame())
    data["attribution"] = {"\n": None}
    with pytest.raises(DecodeError) as e:
        from_json(CompiledFrame, data)
    assert "\n" not in str(e.value) and "attribution['\\n']" in str(e.value)


def test_after_a_collector_pause_what_it_made_is_old_and_the_collector_runs_again() -> None:
    import gc

    from dynaprof.model.store import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        made = [[i] for i in range(50_000)]  # tracked containers, all in the youngest generation
        assert gc.get_count()[0] >= 50_000
    assert gc.isenabled()
    assert gc.get_count()[0] < 1_000  # moved to the oldest: no collection has to walk them now
    assert gc.get_freeze_count() == 0 and made[-1] == [49_999]


def test_a_collector_pause_leaves_objects_someone_froze_frozen() -> None:
    import gc

    from dynaprof.model.store import collector_paused

    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            _ = [[i] for i in range(1_000)]
        # neither thawed (0) nor the new lists frozen too (more); another thread (pytest-xdist's) may
        # free a frozen object meanwhile, so not "equal"
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


@dataclasses.dataclass
class _Mixed:
    a: int
    b: str | None
    c: dict[str, float] = dataclasses.field(default_factory=dict)
    d: list[int] = dataclasses.field(default_factory=list)
    e: int = dataclasses.field(default=0, kw_only=True)
    f: float = dataclasses.field(kw_only=True, default=1.5)


def test_compiled_decoder_passes_leading_fields_by_position_and_the_rest_by_keyword() -> None:
    from dynaprof.model.codec import DecodeError, from_json

    got = from_json(_Mixed, {"a": 1, "b": None, "c": {"x": 2, "y": 0.5}, "e": 3, "f": 2, "z": "ignored"})
    assert got == _Mixed(1, None, {"x": 2.0, "y": 0.5}, e=3, f=2.0)
    assert type(got.c["x"]) is float and type(got.f) is float
    assert from_json(_Mixed, {"a": 1, "b": "s"}) == _Mixed(1, "s")
    with pytest.raises(DecodeError, match=r"^b: missing"):
        from_json(_Mixed, {"a": 1})
    for bad, where in (({"x": float("nan")}, r"c\.x"), ({"x": True}, r"c\.x"), ({"x": "1"}, r"c\.x")):
        with pytest.raises(DecodeError, match=where):
            from_json(_Mixed, {"a": 1, "b": None, "c": bad})
