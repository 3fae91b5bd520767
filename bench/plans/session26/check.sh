#!/usr/bin/env bash
# Session 26, second call: gpu-check (tests with poisoned memory, case checks, fixtures and the benchmarks; no
# TP CLI, no experiments) at branch next/s26 with the switches that measured faster in the first call turned
# on through the environment (KNOBS, e.g. "MOE_WGMMA_AHEAD=1 MOE_WGMMA_UNIFORM_SCALES=1"), so that what lands
# as the new default has passed every GPU test first; then the same benchmarks' headline rows at main's
# defaults (KNOBS unset) in the same run, for the comparison.
# Carry: .carry/s25e-gpu.tar.xz (scripts/pack-gpu-carry build at 1d0fbf3).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s25e-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
echo "knobs: ${KNOBS:-none}"
for kv in ${KNOBS:-}; do export "${kv?}"; done
quick_gpu_check /tmp/n/bin
for kv in ${KNOBS:-}; do unset "${kv%%=*}"; done
pack
for round in 1 2; do
  for knobs in "${KNOBS:-}" ""; do
    # shellcheck disable=SC2086
    env $knobs timeout 40 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8 --formats fp8_block \
      --M 1,8,64,256,1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/round=$round knobs=${knobs:-none} /"
  done
done > $R/knobs-ab.log
cat $R/knobs-ab.log
pack
echo "done t=$(el)"
