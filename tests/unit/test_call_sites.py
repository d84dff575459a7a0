"""Where a compile came from: the user's frames, not torch's or dynaprof's own, told apart by
where dynaprof is installed, not by a folder name (a checkout of this repository is ``dynaprof/``)."""

from __future__ import annotations

from pathlib import Path

from dynaprof.capture import call_sites


def test_dynaprofs_own_frames_are_left_out_by_location_not_by_folder_name() -> None:
    assert not call_sites._user_frame(call_sites.__file__)
    assert not call_sites._user_frame(str(Path(call_sites.__file__).parents[1] / "cli" / "run.py"))
    # a user script in a folder named dynaprof (``git clone .../dynaprof``, then its samples)
    assert call_sites._user_frame("/home/me/dynaprof/samples/training_step.py")
    assert call_sites._user_frame("/home/me/src/dynaprof/train.py")
    assert not call_sites._user_frame("/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py")
    assert not call_sites._user_frame("<frozen runpy>")


def test_a_call_site_is_the_callers_user_frames_outermost_first() -> None:
    def compile_entry() -> list[list[object]]:
        return hook()

    def hook() -> list[list[object]]:
        return call_sites.call_site()  # the recorder's hook calls this: its caller is torch's entry

    names = [name for name, _file, _line in compile_entry()]
    assert names[-1] == "compile_entry" and "hook" not in names  # from the recorder's caller on
    assert "test_a_call_site_is_the_callers_user_frames_outermost_first" in names
