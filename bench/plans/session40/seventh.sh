#!/usr/bin/env bash
# Session 40's seventh plan, for the device time left (~280 s; carry .carry/s40g.tar.xz, built on branch
# next/s40-stage2-prefetch at the commit that adds this plan): MOE_WGMMA_STAGE2_PREFETCH, the swapped stage
# 1's copier bringing stage 2's first weight rows for its block index into L2 once its own copies are issued
# (exact: the tile list is final), so they are read in stage 1's tail. The forced paths (the new row's
# bits), then the switch off against on (Qwen3-30B-A3B fp8, 64 and 256 tokens, two rounds in one process).
set -uo pipefail
export END=${END:-120}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s40g.tar.xz || exit 1
grouped_forced_paths 40 60
grep -E "stage 2 prefetch fp8_block\] (M=40 |TP.*M=40 )" $R/forced-paths.log | head -2
bench_ab $R/stage2-prefetch-ab.log MOE_WGMMA_STAGE2_PREFETCH 0,1 $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 64,256
pack
echo "done t=$(el)"
