#!/usr/bin/env bash
# Set up (test extras, Graphviz, Chromium), then run the checks and the whole test suite.
#   bash scripts/test.sh [PYTEST_ARGS...]                   .venv (torch 2.13.0): ruff, mypy, pytest
#   bash scripts/test.sh --torch VERSION [PYTEST_ARGS...]   .venv-torch-VERSION (torch==VERSION): mypy
#       and pytest against that torch (ruff reads no torch, so the default run covers it), e.g.
#       `--torch 2.4.1 -m versions` for the version subset CI runs (docs/versions.md)
set -euo pipefail
cd "$(dirname "$0")/.."
# two pytest workers (pytest-xdist), a module to one worker so its module fixtures run once: most tests
# wait on a child process, so two at a time take 8.4 min here where one at a time took 14.5
# (docs/versions.md, "Two workers"); DYNAPROF_TEST_WORKERS=0 runs them in this process, one at a time
workers=(-n "${DYNAPROF_TEST_WORKERS:-2}" --dist loadscope)
if [ "${1:-}" = "--torch" ]; then
  [ $# -ge 2 ] || { echo "test: --torch needs a version, e.g. --torch 2.4.1" >&2; exit 2; }
  bash scripts/setup.sh --test --torch "$2"
  venv=.venv-torch-$2
  shift 2
  # mypy's cache is per torch: the stubs it read differ between versions
  "$venv/bin/mypy" --cache-dir "$venv/.mypy_cache"
  exec "$venv/bin/python" -m pytest -q -p no:cacheprovider --durations=15 "${workers[@]}" "$@"
fi
bash scripts/setup.sh --test
.venv/bin/ruff check dynaprof tests benchmarks samples
.venv/bin/mypy
exec .venv/bin/python -m pytest -q --durations=15 "${workers[@]}" "$@"
