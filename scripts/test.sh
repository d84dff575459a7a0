#!/usr/bin/env bash
# Set up (test extras, Graphviz, Chromium), then run the checks and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
.venv/bin/ruff check dynaprof tests benchmarks samples
.venv/bin/mypy
exec .venv/bin/python -m pytest -q "$@"
