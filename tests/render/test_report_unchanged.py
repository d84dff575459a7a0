"""``dynaprof report`` on a run folder leaves an unchanged session.json as it is, and rewrites it
when the derived data it holds is stale or the outputs go elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

from dynaprof.cli import main
from dynaprof.model.store import SESSION_FILE, load_session
from dynaprof.render.base import RenderOptions
from dynaprof.run_folder.writer import derived_data, write_run_folder
from tests.factories import seed_session


def _run_folder(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    write_run_folder(seed_session(), out, RenderOptions(exports="none"))
    return out


def test_an_unchanged_session_is_not_rewritten(tmp_path: Path) -> None:
    out = _run_folder(tmp_path)
    path = out / SESSION_FILE
    before, inode = path.read_bytes(), path.stat().st_ino
    (out / "summary.md").unlink()
    assert main(["report", "-q", "--exports", "none", str(out)]) == 0
    assert path.stat().st_ino == inode  # an atomic rewrite would have replaced the file
    assert path.read_bytes() == before
    assert (out / "summary.md").is_file()  # the outputs were written all the same
    assert main(["report", "-q", "--exports", "none", str(path)]) == 0  # named by its file, too
    assert path.stat().st_ino == inode


def test_stale_derived_data_is_rewritten(tmp_path: Path) -> None:
    out = _run_folder(tmp_path)
    path = out / SESSION_FILE
    fresh = derived_data(load_session(out))
    data = json.loads(path.read_text())
    data["attribution"] = {k: (0.0 if isinstance(v, float) else v) for k, v in data["attribution"].items()}
    path.write_text(json.dumps(data))
    assert derived_data(load_session(out)) != fresh
    assert main(["report", "-q", "--exports", "none", str(out)]) == 0
    assert derived_data(load_session(out)) == fresh


def test_a_report_elsewhere_writes_its_session(tmp_path: Path) -> None:
    out = _run_folder(tmp_path)
    other = tmp_path / "other"
    assert main(["report", "-q", "--exports", "none", "-o", str(other), str(out)]) == 0
    assert (other / SESSION_FILE).read_bytes() == (out / SESSION_FILE).read_bytes()
