#!/usr/bin/env bash
# The peft target_parameters case's first screens at 80 columns, eager and Inductor, of this tree
# and of an older revision (docs/reports.md, "One root cause, one finding"):
#   bash benchmarks/peft_first_screens.sh [REV] [OUT]     (REV default: baaf5e7; needs peft in .venv)
set -euo pipefail
cd "$(dirname "$0")/.."
REV=${1:-baaf5e7}
OUT=${2:-$(mktemp -d /tmp/dynaprof-peft-XXXX)}
SCRIPT=$PWD/benchmarks/differential/mixtral_lora_target_parameters.py
git worktree add -q --detach "$OUT/before-tree" "$REV"
trap 'git worktree remove --force "$OUT/before-tree"' EXIT
for side in before after; do
  root=$PWD; [ "$side" = before ] && root=$OUT/before-tree
  for backend in eager inductor; do
    COLUMNS=80 TORCHINDUCTOR_CACHE_DIR="$OUT/cache-$side-$backend" PYTHONPATH="$root" \
      .venv/bin/python -m dynaprof run -o "$OUT/$side-$backend" "$SCRIPT" "$backend" \
      > "$OUT/$side-$backend.out" 2> "$OUT/$side-$backend.err" || true
    echo "$side $backend: $OUT/$side-$backend.err"
  done
done
