"""bench_instructions.py reads callgrind's dumps: one per compile, in the order they were made."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import load_benchmark


def test_dumps_are_read_in_compile_order(tmp_path: Path) -> None:
    bench = load_benchmark("bench_instructions")
    # callgrind names a process's dumps cg.PID.1, cg.PID.2, ... and writes cg.PID (empty here) at exit
    for n, total in ((10, 7), (2, 900), (1, 1_234)):
        (tmp_path / f"cg.4242.{n}").write_text(f"version: 1\nevents: Ir\nsummary: {total}\ntotals: {total}\n")
    (tmp_path / "cg.4242").write_text("events: Ir\ntotals: 0\n")
    (tmp_path / "python-callgrind").write_text("#!/bin/sh\n")
    assert bench.dumps(tmp_path) == [1_234, 900, 7]


def test_wrapper_runs_this_interpreter_under_callgrind(tmp_path: Path) -> None:
    bench = load_benchmark("bench_instructions")
    text = bench.wrapper(tmp_path).read_text()
    assert "--collect-atstart=no" in text
    assert f"--callgrind-out-file={tmp_path}/cg.%p" in text
    assert (tmp_path / "python-callgrind").stat().st_mode & 0o111


def test_per_hook_modes_install_one_hook_each() -> None:
    bench = load_benchmark("bench_instructions")
    from dynaprof.capture.torch_hooks import STEPS, chosen_steps

    modes = bench.hook_modes()
    assert len(modes) == len(STEPS) - 1
    for mode in modes:
        opts, env = bench.MODES[mode]
        assert opts == ["--sampler", "none"]
        installed = [n for n, _ in chosen_steps(False, env["DYNAPROF_HOOKS"])]
        assert installed == ["compile_windows", mode.removeprefix("compile windows + ")]
