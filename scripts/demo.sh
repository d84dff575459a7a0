#!/usr/bin/env bash
# Set up, then profile the seed case (32 parametrized Linear layers, eager backend).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/dynaprof run -o dynaprof-runs/demo --force samples/parametrized_linear.py --parametrize "$@"
