#!/usr/bin/env bash
# Create .venv with torch 2.13.0 (CPU wheel) and dynaprof; install Graphviz's `dot` (and, with
# --test, Chromium for the browser tests) from Debian when missing. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TESTS=0
[ "${1:-}" = "--test" ] && WITH_TESTS=1
PY=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
# torch first and pinned: an unpinned `torch` would pull a multi-GB CUDA build
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "setup: installing torch==2.13.0"
  .venv/bin/pip install -q torch==2.13.0
fi
if [ "$WITH_TESTS" = 1 ]; then
  .venv/bin/pip install -q torch==2.13.0 -e ".[test]"  # torch pinned again: nothing may move it
else
  .venv/bin/pip install -q torch==2.13.0 -e .
fi

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: apt-get install $*"
    (apt-get update -qq || true) >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    echo "setup: please install $* (e.g. sudo apt-get install $*)" >&2
  fi
}
need=()
command -v dot >/dev/null || need+=(graphviz)
if [ "$WITH_TESTS" = 1 ] && [ ! -x /usr/bin/chromium ]; then need+=(chromium); fi
if [ ${#need[@]} -gt 0 ]; then apt_install "${need[@]}"; fi
echo "setup: ready ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
