#!/usr/bin/env bash
# Regenerates every fixture in this folder (run from the repository root):
#   bash tests/data/torch_trace/make_fixtures.sh
# Each block is also quoted in README.md next to the fixture it produces.
set -euo pipefail
D=tests/data/torch_trace
PY=.venv/bin/python
T=$(mktemp -d)
trace() {  # trace NAME SCRIPT [ARGS...]: run SCRIPT under TORCH_TRACE, print the log path
  local name=$1; shift
  TORCH_TRACE="$T/$name" "$PY" "$@" >/dev/null 2>&1
  ls "$T/$name"/dedicated_log_torch_trace_*.log
}
cp "$(trace one_frame $D/scripts/one_frame.py)" $D/one_frame.log
gzip -9 -n -c "$(trace graph_break_recompile $D/scripts/graph_break_recompile.py)" > $D/graph_break_recompile.log.gz
gzip -9 -n -c "$(trace restart $D/scripts/restart.py)" > $D/restart.log.gz
gzip -9 -n -c "$(trace reset $D/scripts/reset.py)" > $D/reset.log.gz
gzip -9 -n -c "$(trace seed samples/parametrized_linear.py --backend eager --layers 4)" > $D/seed_layers4.log.gz
gzip -9 -n -c "$(trace failing_backend $D/scripts/failing_backend.py)" > $D/failing_backend.log.gz
# corrupt_json.log: one_frame.log with the compilation_metrics envelope's JSON broken
"$PY" -c 'import sys; s = open(sys.argv[1]).read(); open(sys.argv[2], "w").write(s.replace("\"guard_count\": ", "\"guard_count\" ", 1))' $D/one_frame.log $D/corrupt_json.log
# truncated.log: one_frame.log cut mid-record
head -c 30000 $D/one_frame.log > $D/truncated.log
# no_final_newline.log, md5_mismatch.log, bad_chromium.log: one_frame.log edited as in the wild
"$PY" $D/make_edited.py
# aot_inductor.log.gz: torch._inductor.aoti_compile_and_package on CPU (no record has a compile id; ~1 min)
gzip -9 -n -c "$(trace aot_inductor $D/scripts/aoti.py "$T/m.pt2")" > $D/aot_inductor.log.gz
# cache_warm.log.gz: Inductor twice around torch._dynamo.reset(), with an empty cache folder: a miss, then a hit
gzip -9 -n -c "$(TORCHINDUCTOR_CACHE_DIR="$T/inductor_cache" trace cache_warm $D/scripts/cache_warm.py)" > $D/cache_warm.log.gz
# training_step.log.gz: forward 0/0 and its lazy backward compile (bwd_compilation_metrics), optimizer frames
gzip -9 -n -c "$(trace training_step samples/training_step.py --no-parametrize --backend aot_eager --layers 2 --width 16 --steps 1)" > $D/training_step.log.gz
# ranks/: one log per rank from a 2-process gloo run
TORCH_TRACE="$T/ranks" .venv/bin/torchrun --nproc_per_node 2 --master_port 29517 $D/scripts/ranks.py >/dev/null 2>&1
rm -rf $D/ranks && mkdir -p $D/ranks
for r in 0 1; do
  gzip -9 -n -c "$T"/ranks/dedicated_log_torch_trace_rank_${r}_*.log > $D/ranks/dedicated_log_torch_trace_rank_${r}_fixture.log.gz
done
# ranks_nosuffix/: the same logs named without torch's random suffix, as collected logs often are
rm -rf $D/ranks_nosuffix && mkdir -p $D/ranks_nosuffix
for r in 0 1; do
  cp $D/ranks/dedicated_log_torch_trace_rank_${r}_fixture.log.gz $D/ranks_nosuffix/dedicated_log_torch_trace_rank_${r}.log.gz
done
rm -rf "$T"
