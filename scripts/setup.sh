#!/usr/bin/env bash
# Create .venv with torch 2.13.0 (CPU wheel) and dynaprof; install Graphviz's `dot` (and, with
# --test, Chromium for the browser tests and Slurm with munge for the executors' tests) from Debian
# when missing. Safe to run repeatedly.
#   bash scripts/setup.sh [--test] [--torch VERSION]
# --torch VERSION: the same in .venv-torch-VERSION with torch==VERSION (PyPI's build: a CUDA one for
# most releases, ~5 GB, which runs on CPU), to check dynaprof against another torch.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TESTS=0
TORCH=2.13.0
VENV=.venv
while [ $# -gt 0 ]; do
  case $1 in
    --test) WITH_TESTS=1 ;;
    --torch)
      [ $# -ge 2 ] || { echo "setup: --torch needs a version, e.g. --torch 2.4.1" >&2; exit 2; }
      # a release number only: it names a folder and is a pip pin
      [[ $2 =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "setup: --torch $2: expected a release like 2.4.1" >&2; exit 2; }
      TORCH=$2; VENV=.venv-torch-$2; shift ;;
    *) echo "setup: unknown option $1 (expected --test, --torch VERSION)" >&2; exit 2 ;;
  esac
  shift
done
PY=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PY" -m venv "$VENV"
fi
# torch first and pinned: an unpinned `torch` would pull a multi-GB CUDA build; a venv holding another
# torch than the pin (an interrupted install, a moved torch) is put back on the pin
have=$("$VENV/bin/python" -c "import torch; print(torch.__version__.split('+')[0])" 2>/dev/null || true)
if [ "$have" != "$TORCH" ]; then
  echo "setup: installing torch==$TORCH into $VENV"
  "$VENV/bin/pip" install -q "torch==$TORCH"
fi
if [ "$WITH_TESTS" = 1 ]; then
  "$VENV/bin/pip" install -q "torch==$TORCH" -e ".[test]"  # torch pinned again: nothing may move it
else
  "$VENV/bin/pip" install -q "torch==$TORCH" -e .
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
# the executors' tests start a one-node Slurm of their own (tests/e2e/slurm_cluster.py)
if [ "$WITH_TESTS" = 1 ] && { [ ! -x /usr/sbin/slurmctld ] || [ ! -x /usr/sbin/slurmd ] || [ ! -x /usr/sbin/munged ]; }; then
  need+=(slurm-wlm munge)
fi
if [ ${#need[@]} -gt 0 ]; then apt_install "${need[@]}"; fi
echo "setup: ready ($VENV: $("$VENV/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
