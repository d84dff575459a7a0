"""``--cprofile``: cProfile enabled only while Dynamo compiles, one .prof per compile window.

Coexistence rules (a profiler hook is per thread and exclusive on Python 3.11):
* the script's own profiler (``sys.getprofile()`` set): left alone; that window is skipped and
  a warning says so;
* ``TORCH_COMPILE_CPROFILE`` (torch's own per-compile cProfile): torch keeps its hook and its
  files; dynaprof does not start a second profiler and copies torch's profile for the compile
  into the run folder instead (torch's own file is overwritten after a reset, our copy is not).
"""

from __future__ import annotations

import cProfile
import glob
import os
import pstats
import shutil
import sys
import tempfile
from collections.abc import Callable

from dynaprof.capture.torch_private import _private
from dynaprof.fmt import safe_key  # the same file names as the per-compile graphs
from dynaprof.model import frame_keys
from dynaprof.model.journal import CProfile, JournalRecord


class CompileProfiler:
    def __init__(self, out_dir: str, warn: Callable[[str], None]) -> None:
        self.out_dir = out_dir
        self.warn = warn
        os.makedirs(out_dir, exist_ok=True)
        self._prof: cProfile.Profile | None = None
        self._key: str | None = None
        self._files: dict[str, str] = {}
        self._warned_foreign = False
        self.torch_cprofile = _torch_cprofile_on()
        if self.torch_cprofile:
            warn(
                "TORCH_COMPILE_CPROFILE is set: torch profiles each compile itself; dynaprof copies "
                "torch's profiles into the run folder instead of starting a second profiler"
            )

    def start(self, key: str | None) -> None:
        self._key = key
        if self.torch_cprofile or key is None:
            return
        if sys.getprofile() is not None:
            if not self._warned_foreign:
                self._warned_foreign = True
                self.warn(
                    f"another profiler is active (sys.setprofile); --cprofile left it alone and "
                    f"did not profile compile {key} (nor later ones while it stays active)"
                )
            return
        self._prof = cProfile.Profile()
        self._prof.enable()

    def stop(self) -> None:
        key, prof = self._key, self._prof
        self._prof = None
        if prof is not None:
            prof.disable()
            if key is not None:
                path = os.path.join(self.out_dir, f"{safe_key(key)}.prof")
                prof.dump_stats(path)
                self._files[key] = path
        elif self.torch_cprofile and key is not None:
            self._copy_torch_profile(key)

    def _copy_torch_profile(self, key: str) -> None:
        if frame_keys.is_backward_key(key):  # torch profiles Dynamo's frame compiles only
            return
        cid = frame_keys.compile_id_of(key).replace("/", "_")
        candidates = glob.glob(os.path.join(tempfile.gettempdir(), f"_compile_inner_{cid}*.profile"))
        if not candidates:
            return
        newest = max(candidates, key=os.path.getmtime)
        path = os.path.join(self.out_dir, f"{safe_key(key)}.prof")
        try:
            shutil.copyfile(newest, path)
            self._files[key] = path
        except OSError as e:
            self.warn(f"could not copy torch's profile {newest}: {e}")

    def finish(self, emit: Callable[[JournalRecord], None]) -> None:
        """Merge the per-compile profiles into run.prof and tell the journal where they are."""
        files = {k: p for k, p in self._files.items() if os.path.exists(p)}
        merged = None
        if files:
            stats = pstats.Stats(*files.values())
            merged = os.path.join(self.out_dir, "run.prof")
            stats.dump_stats(merged)
        record: CProfile = {"t": "cprofile", "files": files, "merged": merged}
        emit(record)


def _torch_cprofile_on() -> bool:
    try:
        return bool(_private("torch._dynamo.config").cprofile)
    except Exception:
        return bool(os.environ.get("TORCH_COMPILE_CPROFILE"))
