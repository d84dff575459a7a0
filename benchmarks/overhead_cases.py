"""The compiles ``bench_overhead.py --per-hook`` times, one case per process, profiled in-process.

    python benchmarks/overhead_cases.py CASE --profile {none,hooks,default} [--repeat N]

Cases: ``seed-eager`` / ``seed-eager-plain`` (the seed, parametrized or plain, eager backend),
``seed-inductor`` / ``seed-inductor-plain`` (the same on Inductor, CPU), ``breaks`` (the graph-break
and recompile sample: a print() splits the frame, a new dtype and a new shape recompile it),
``loop`` (not a compile: 10,000 calls of a small compiled function, the steady state).
Each compile runs after ``torch._dynamo.reset()``; the first is the process's first (lazy imports
included), the rest are warm. ``--profile hooks`` wraps the compiles in ``dynaprof.profile()`` with
its sampler off (``DYNAPROF_HOOKS`` picks which hooks), ``default`` at its default rate. Prints one
line per compile: ``compile N: W ms (cpu C ms)``, C the compiling thread's CPU time.

``--configs A,B,... --rounds R`` measures configurations against each other instead: the process
compiles the case once (torch's lazy imports done), then forks one child per configuration, which
profiles with it (``plain``: none; ``off``: the compile windows only; ``all``: every hook;
``default``: every hook and the sampler; a hook's name: that hook alone). All children stay alive;
each round tells each of them, in a shuffled order, to compile once. Children of one parent share
its memory layout and imports, and a slow spell of the machine falls on every configuration of a
round, so they differ by the configuration alone, which fresh processes do not (their spread on
this VM is +-10%). Torch runs one intra-op thread here (OpenMP is not fork-safe). Prints one JSON
line per compile: ``{"config", "round", "cpu"}``; round 0 is each child's first compile.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import select
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "samples"))

import graph_breaks_recompiles as breaks  # noqa: E402
import parametrized_linear as seed  # noqa: E402
import torch  # noqa: E402

import dynaprof  # noqa: E402

CHILD_TIMEOUT_S = 600
CASES = ("seed-eager", "seed-eager-plain", "seed-inductor", "seed-inductor-plain", "breaks", "loop")


def seed_compile(parametrized: bool, backend: str) -> Callable[[], None]:
    """The seed model built and run eagerly; the returned call compiles it (what is timed)."""
    m = seed.Module(32, 128)
    if parametrized:
        seed.parametrize(m)
    else:
        m.half()
    x = torch.randn([1, 128], dtype=torch.half)
    m(x)
    m.compile(backend=backend)
    return lambda: m(x)


def breaks_compile() -> Callable[[], None]:
    fn = torch.compile(breaks.step, backend="eager", dynamic=False)
    args = [torch.randn(8, 8), torch.randn(8, 8, dtype=torch.float64), torch.randn(16, 16), torch.randn(8, 8)]

    def run() -> None:
        with contextlib.redirect_stdout(None):
            for a in args:
                fn(a)

    return run


def steady_loop() -> Callable[[], None]:
    """A small function compiled and called 100 times (outside the timing); the timed part is the
    next 10,000 calls: what every call of compiled code pays under dynaprof (the call counter)."""
    fn = torch.compile(lambda x: x * 2 + 1, backend="eager", dynamic=False)
    x = torch.randn(8)
    for _ in range(100):
        fn(x)

    def run() -> None:
        for _ in range(10_000):
            fn(x)

    return run


def case(name: str) -> Callable[[], None]:
    if name == "breaks":
        return breaks_compile()
    if name == "loop":
        return steady_loop()
    return seed_compile(not name.endswith("-plain"), "inductor" if "inductor" in name else "eager")


def compile_cpu(name: str) -> float:
    """CPU seconds of the compiling thread for one compile of case ``name``, after a reset."""
    torch._dynamo.reset()
    work = case(name)
    gc.collect()  # the previous compile's garbage is not this one's to collect
    cpu = time.thread_time()
    work()
    return time.thread_time() - cpu


def child(name: str, config: str, cmd: int, out: int) -> None:
    """In a forked child: profile ``config``, then one compile per byte read from ``cmd``, its
    CPU seconds written to ``out`` as a line; stop at end of file."""
    if config not in ("plain", "all", "default"):
        os.environ["DYNAPROF_HOOKS"] = "" if config == "off" else config
    prof = None
    with tempfile.TemporaryDirectory() as d:
        if config != "plain":
            prof = dynaprof.profile(Path(d) / "run", sampler="builtin" if config == "default" else "none",
                                    render=False).start()
        while os.read(cmd, 1):
            os.write(out, f"{compile_cpu(name)}\n".encode())
        if prof is not None:
            prof.stop()


class Child:
    """One forked child holding a configuration, compiling when told."""

    #: the parent's ends of every child's pipes: a later child must close its copies, or an
    #: earlier child never sees the end of its command pipe
    parent_fds: ClassVar[list[int]] = []

    def __init__(self, name: str, config: str) -> None:
        self.config = config
        cmd_r, self.cmd = os.pipe()
        self.out, out_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            for fd in [*Child.parent_fds, self.cmd, self.out]:
                os.close(fd)
            try:
                child(name, config, cmd_r, out_w)
            finally:
                os._exit(0)
        os.close(cmd_r)
        os.close(out_w)
        Child.parent_fds += [self.cmd, self.out]

    def compile(self) -> float:
        os.write(self.cmd, b"x")
        if not select.select([self.out], [], [], CHILD_TIMEOUT_S)[0]:
            os.kill(self.pid, signal.SIGKILL)
            raise SystemExit(f"{self.config}: the child hung for {CHILD_TIMEOUT_S} s")
        line = os.read(self.out, 64)
        if not line:
            raise SystemExit(f"{self.config}: the child died")
        return float(line)

    def close(self) -> None:
        os.close(self.cmd)
        os.waitpid(self.pid, 0)
        os.close(self.out)


def compare(name: str, configs: list[str], rounds: int) -> None:
    """Every configuration in its own forked child, all alive at once; each round tells each child
    (in a shuffled order) to compile once, so a slow spell of the machine falls on every
    configuration alike. Round 0 is each child's first compile (dynaprof's lazy installs)."""
    # GNU OpenMP is not fork-safe: a child hangs in its first parallel region if the parent ran
    # one. One intra-op thread keeps torch's eager ops out of OpenMP (the compile is Python).
    torch.set_num_threads(1)
    compile_cpu(name)
    children = [Child(name, c) for c in configs]
    try:
        for r in range(rounds + 1):
            order = children[:]
            random.shuffle(order)
            for c in order:
                print(json.dumps({"config": c.config, "round": r, "cpu": c.compile()}), flush=True)
    finally:
        for c in children:
            c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", choices=CASES)
    ap.add_argument("--profile", choices=("none", "hooks", "default"), default="none")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--configs", default="", help="compare these configurations in forked children")
    ap.add_argument("--rounds", type=int, default=5, help="with --configs")
    ap.add_argument("--callgrind", action="store_true",
                    help="under valgrind --tool=callgrind --collect-atstart=no: count each compile's "
                         "instructions alone, one dump each (bench_instructions.py)")
    args = ap.parse_args()
    if args.configs:
        compare(args.case, [c.strip() for c in args.configs.split(",") if c.strip()], args.rounds)
        return
    with tempfile.TemporaryDirectory() as d:
        prof = None
        if args.profile != "none":
            prof = dynaprof.profile(Path(d) / "run", sampler="none" if args.profile == "hooks" else "builtin",
                                    render=False).start()
        for i in range(args.repeat):
            torch._dynamo.reset()
            work = case(args.case)
            gc.collect()  # the previous compile's garbage is not this one's to collect
            t, cpu = time.perf_counter(), time.thread_time()
            if args.callgrind:
                torch._C._valgrind_toggle()  # collection on: this compile's instructions only
            work()
            if args.callgrind:
                torch._C._valgrind_toggle_and_dump_stats()  # off, and one dump per compile
            wall, cpu = time.perf_counter() - t, time.thread_time() - cpu
            print(f"compile {i}: {wall * 1000:.1f} ms (cpu {cpu * 1000:.1f} ms)", flush=True)
        if prof is not None:
            prof.stop()


if __name__ == "__main__":
    main()
