#!/usr/bin/env bash
# Session 34, first call. Carry: .carry/s34a-gpu.tar.xz (main at ccb6c58, as session 33 left it). On an H200
# the read sweep first (does 64 KB in flight per SM reach ~4.5 TB/s in the swap-AB stages' 32-row steps?),
# then the quick gpu-check (the H200 column is session 32's 27df0f8; on any card it runs ccb6c58's host timing
# mend for the first time), then on an H200 Auto's thresholds at 64-256 tokens and L2 requests ahead.
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s34a-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
if grep -q H200 $R/gpu.txt; then
  timeout 40 $M bench --read-sweep > $R/read-sweep.log 2>&1
  echo "read sweep rc $?"
  grep -v "^read sweep" $R/read-sweep.log | tail -40
  pack
fi
quick_gpu_check /tmp/n/bin 120
pack
if grep -q H200 $R/gpu.txt; then
  PT_SHAPES=qwen3-30b-a3b PT_FORMATS=fp8_block PT_M=48,64,96,128,192,256 \
    timeout "$(cap 100 40)" scripts/path-thresholds $M > $R/paths.log 2>&1
  cat $R/paths.log
  pack
  env_ab_rows $R/ahead.log MOE_SWAP_AB_L2_AHEAD "0 1" $M --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
  pivot_rows $R/ahead.log
  pack
fi
echo "done t=$(el)"
