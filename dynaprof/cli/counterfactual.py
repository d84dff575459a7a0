"""``dynaprof run --counterfactual``: the script once more, every parametrization folded.

The second run is the user's script in a process of its own, with cold compiler caches, its
output kept out of the user's terminal (in ``counterfactual/output.log`` in the run folder while
it runs: its last line is said if it fails), and the fold hook installed (``capture.hooks.fold``).
What it built is compared with the profiled run's kernels when that run is assembled
(``ingest.kernel_match``); its folder is removed after, its figures kept in ``Session.counterfactual``.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from dynaprof.capture.child import ChildConfig
from dynaprof.capture.journal import JOURNAL_FILE, read_journal
from dynaprof.capture.launcher import launch
from dynaprof.cli.common import info
from dynaprof.fmt import plural, seconds, stored_s
from dynaprof.ingest.assemble import ParentFacts, assemble_plain
from dynaprof.ingest.kernel_match import PlainKernels

#: the folder under the run folder the second run writes into while it runs
COUNTERFACTUAL_DIR = "counterfactual"


def run_plain(cfg: ChildConfig, run_dir: Path, caches: dict[str, str], quiet: bool) -> PlainKernels | None:
    """Run the script again with every parametrization folded (``caches``: fresh compiler cache
    folders for it); its kernels and figures, or None (said on stderr) where it failed."""
    where = run_dir / COUNTERFACTUAL_DIR
    where.mkdir(parents=True, exist_ok=True)
    journal, log = where / JOURNAL_FILE, where / "output.log"
    journal.write_bytes(b"")
    plain_cfg = dataclasses.replace(
        cfg, journal=str(journal), sampler="builtin", rate_hz=1000.0, cprofile_dir=None, torch_trace_dir=None,
        inline_profile=False, time_calls=False, fold_parametrizations=True,
    )  # fmt: skip
    if not quiet:
        info("dynaprof: counterfactual run: the script again with every parametrization folded, cold caches")
    try:
        result = launch(plain_cfg, extra_env=caches, output=log)
        facts = ParentFacts(command=[], exit_status=result.exit_status, signal=result.signal,
                            wall_s=stored_s(result.wall_s), sampler="builtin")  # fmt: skip
        _, plain = assemble_plain((rec for _, rec in read_journal(journal)), facts)
        if result.exit_status != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            info(f"dynaprof: the counterfactual run exited with status {result.exit_status}"
                 + (f" ({tail[0][:200]})" if tail else "") + "; its kernels are not compared")  # fmt: skip
            return None
    finally:
        shutil.rmtree(where, ignore_errors=True)
    if not plain.folded:
        info("dynaprof: the counterfactual run found no parametrization to fold in what torch.compile was given; "
             "its kernels are not compared")  # fmt: skip
        return None
    if not quiet:
        info(f"dynaprof: counterfactual run: {plural(len(plain.folded), 'parametrization')} folded, "
             f"{seconds(plain.compile_s)} compile, {plural(plain.count, 'Inductor kernel')}")
    return plain
