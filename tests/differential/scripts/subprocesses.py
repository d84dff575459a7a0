"""Subprocesses and a fork around compiles: their output and exit status reach the script unchanged.

A ``subprocess.run`` child that compiles and prints, one that exits with a status of its own, and
an ``os.fork`` child that compiles after the parent has and reports through a pipe.
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch

CHILD = """
import torch
f = torch.compile(lambda x: (x + 1).sum(), backend="eager")
print("child result", f(torch.arange(4.0)).item(), "grad", torch.is_grad_enabled())
"""


def main() -> None:
    out = torch.compile(lambda x: (x * 2).sum(), backend="eager")(torch.arange(4.0))
    print(f"parent result={out.item()}")
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=False)
    print(f"subprocess: rc={proc.returncode} out={proc.stdout.strip()!r}")
    code = "import sys; print('bye'); sys.exit(7)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    print(f"exiting subprocess: rc={proc.returncode} out={proc.stdout.strip()!r}")
    sys.stdout.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: compile something new, report, leave without running the parent's cleanup
        os.close(r)
        res = torch.compile(lambda x: (x - 1).sum(), backend="eager")(torch.arange(4.0))
        os.write(w, f"fork child result={res.item()}".encode())
        os._exit(3)
    os.close(w)
    with os.fdopen(r) as pipe:
        msg = pipe.read()
    _, status = os.waitpid(pid, 0)
    print(f"{msg} exit={os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    main()
