"""Pictures of the first screen a user sees for one run folder (docs/reports.md): report.html's top
in headless Chromium, and the terminal summary as tmux shows it at 80 columns.

    .venv/bin/python scripts/first_screen_pictures.py RUN_DIR OUT_DIR [NAME]

Writes OUT_DIR/NAME-report.png and OUT_DIR/NAME-terminal.txt (``capture-pane`` of
``dynaprof report RUN_DIR`` in a tmux window 80 columns wide).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]


def report_png(run: Path, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto((run / "report.html").resolve().as_uri())
        page.screenshot(path=str(out))
        browser.close()


def terminal_text(run: Path, out: Path, columns: int = 80) -> None:
    session = f"dynaprof-pictures-{int(time.time())}"
    done = out.with_suffix(".done")
    command = (f"{shlex.quote(str(ROOT / '.venv/bin/dynaprof'))} report {shlex.quote(str(run))}; "
               f"touch {shlex.quote(str(done))}; sleep 60")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(columns), "-y", "200", command], check=True)
    try:
        for _ in range(600):
            if done.exists():
                break
            time.sleep(0.2)
        pane = subprocess.run(["tmux", "capture-pane", "-p", "-t", session, "-S", "0", "-E", "199"],
                              capture_output=True, text=True, check=True).stdout
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
        done.unlink(missing_ok=True)
    out.write_text(pane.rstrip() + "\n", encoding="utf-8")


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    run, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    name = sys.argv[3] if len(sys.argv) > 3 else run.name
    out_dir.mkdir(parents=True, exist_ok=True)
    terminal_text(run, out_dir / f"{name}-terminal.txt")
    report_png(run, out_dir / f"{name}-report.png")
    print(f"wrote {out_dir / (name + '-terminal.txt')} and {out_dir / (name + '-report.png')}")


if __name__ == "__main__":
    main()
