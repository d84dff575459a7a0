"""Where a compile came from: the user's frames, not torch's or dynaprof's own, told apart by
where dynaprof is installed, not by a folder name (a checkout of this repository is ``dynaprof/``)."""

from __future__ import annotations

from pathlib import Path

from dynaprof.capture import call_sites, own_code


def test_dynaprofs_own_frames_are_left_out_by_location_not_by_folder_name() -> None:
    assert not call_sites._user_frame(call_sites.__file__)
    assert not call_sites._user_frame(str(Path(call_sites.__file__).parents[1] / "cli" / "run.py"))
    # a user script in a folder named dynaprof (``git clone .../dynaprof``, then its samples)
    assert call_sites._user_frame("/home/me/dynaprof/samples/training_step.py")
    assert call_sites._user_frame("/home/me/src/dynaprof/train.py")
    assert not call_sites._user_frame("/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py")
    assert not call_sites._user_frame("<frozen runpy>")


def test_every_file_of_the_package_is_its_own_the_hooks_wrappers_too() -> None:
    package = Path(own_code.__file__).parent.parent
    assert own_code.own_file(str(package / "capture" / "hooks" / "traced_stack.py"))
    assert own_code.own_file(str(package / "capture" / "stacks.py"))
    assert own_code.own_file(str(package / "render" / "flamegraph.py"))
    assert not own_code.own_file(str(package.parent / "samples" / "parametrized_linear.py"))
    assert not own_code.own_file("<string>")


def test_the_walker_leaves_out_frames_of_the_hooks_subpackage() -> None:
    """A wrapper defined in ``capture/hooks/`` (as Dynamo's inline hook is) does not show as a frame
    between its caller and the function it wraps."""
    import sys

    from dynaprof.capture.hooks import traced_stack
    from dynaprof.capture.stacks import FunctionTable, Markers, StackWalker

    ns: dict[str, object] = {}
    wrapper_src = "def wrap(fn):\n    return fn()\n"
    exec(compile(wrapper_src, traced_stack.__file__, "exec"), ns)  # a function of the hooks' file

    def inner() -> object:
        return sys._getframe()

    def outer() -> object:
        return ns["wrap"](inner)  # type: ignore[operator]

    table = FunctionTable()
    ids, _, _ = StackWalker(table, Markers()).walk(outer())  # type: ignore[arg-type]
    names = [table.info[i][0] for i in ids]
    assert names[-2:] == [outer.__qualname__, inner.__qualname__], names
    assert "wrap" not in names


def test_a_call_site_is_the_callers_user_frames_outermost_first() -> None:
    def compile_entry() -> list[list[object]]:
        return hook()

    def hook() -> list[list[object]]:
        return call_sites.call_site()  # the recorder's hook calls this: its caller is torch's entry

    names = [name for name, _file, _line in compile_entry()]
    assert names[-1] == "compile_entry" and "hook" not in names  # from the recorder's caller on
    assert "test_a_call_site_is_the_callers_user_frames_outermost_first" in names


def test_torch_files_are_installed_torch_or_a_source_checkout_on_any_os() -> None:
    from dynaprof.model.torch_files import torch_file

    assert torch_file("/usr/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py")
    assert torch_file("/home/dev/pytorch/torch/_inductor/scheduler.py")  # a source checkout
    assert torch_file("C:\\Python311\\Lib\\site-packages\\torch\\nn\\utils\\parametrize.py")
    assert not torch_file("/home/dev/project/model.py")
    assert not torch_file("/usr/lib/python3.11/site-packages/torchao/quantization/quant_api.py")
    assert not call_sites._user_frame("/home/dev/pytorch/torch/nn/modules/module.py")
    assert call_sites._user_frame("/home/dev/project/train.py")
