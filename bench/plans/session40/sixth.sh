#!/usr/bin/env bash
# Session 40's sixth plan (carry .carry/s40f.tar.xz, built on branch next/s40-prefetch at the commit that adds
# this plan): the swapped stage 1's prefetch on by default (8 steps: fifth.sh had 0 / 8 at M=64 219.8 / 218.4
# us, M=128 225.8 / 223.9, M=256 238.1 / 236.9 on an H100), and MOE_GROUPING_TRIGGER_FIRST: the grouping's
# last kernel lets that stage 1 launch before its own wait, so the prefetch window covers the routing too.
# Here: the forced paths (the new row's bits), the trigger off against on, the prefetch 0 against 8 with the
# trigger as it came out, then the quick gpu-check (its switches-on cases run the trigger).
set -uo pipefail
export END=${END:-330}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s40f.tar.xz || exit 1
grouped_forced_paths 60 250
grep -E "prefetch from the routing fp8_block\] (M=40 |TP.*M=40 )" $R/forced-paths.log | head -2
clocks_start $R/clocks.log
bench_ab $R/trigger-ab.log MOE_GROUPING_TRIGGER_FIRST 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,128,256
MOE_GROUPING_TRIGGER_FIRST=$(ab_winner $R/trigger-ab.log MOE_GROUPING_TRIGGER_FIRST 0 1)
export MOE_GROUPING_TRIGGER_FIRST
bench_ab $R/prefetch-ab.log MOE_WGMMA_PREFETCH_STEPS 0,8 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,256
clocks_stop
pack
env | grep -E "^MOE_" | sort | tee $R/switches.txt
quick_gpu_check $B 5
pack
echo "done t=$(el)"
