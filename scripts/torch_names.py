"""Which of the private torch names dynaprof's capture reaches does the installed torch lack?
One line each; exits 1 when a name this torch should have is missing (a hook that will warn).
    .venv-torch-2.14.1/bin/python scripts/torch_names.py
(``bash scripts/check_environments.sh names`` runs it in every torch venv present.)"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from dynaprof.capture.torch_private import private_name_report

lines, broken = private_name_report(torch.__version__)
print("\n".join(lines))
sys.exit(1 if broken else 0)
