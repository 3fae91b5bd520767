#!/usr/bin/env bash
# Session 40's fifth plan (carry .carry/s40e.tar.xz, built on branch next/s40-prefetch at the commit that adds
# this plan). ncu had the call's route and align kernels at 7.4 and 5.3 us at 64 tokens (H100), time in which
# the weights' DRAM stream has not begun: MOE_WGMMA_PREFETCH_STEPS=N launches the swapped stage 1 overlapped
# with the grouping and has each block bring the first N K steps of its probable first weight rows into L2
# before its wait (tile t guessed to be expert t). Here: the grouped-GEMM forced paths (the prefetch row's
# bits), N = 0, 4, 8, 16 in one process (Qwen3-30B-A3B fp8, 64-256 tokens, two rounds), then the quick
# gpu-check with 8 where 8 beat 0 (ab_winner).
set -uo pipefail
export END=${END:-420}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s40e.tar.xz || exit 1
grouped_forced_paths 60 300
grep -E "prefetch fp8_block\] (M=40 |TP.*M=40 )" $R/forced-paths.log | head -2
clocks_start $R/clocks.log
bench_ab $R/prefetch-ab.log MOE_WGMMA_PREFETCH_STEPS 0,4,8,16 $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 64,128,256
clocks_stop
pack
MOE_WGMMA_PREFETCH_STEPS=$(ab_winner $R/prefetch-ab.log MOE_WGMMA_PREFETCH_STEPS 0 8)
export MOE_WGMMA_PREFETCH_STEPS
env | grep -E "^MOE_" | sort | tee $R/switches.txt
quick_gpu_check $B 20
pack
echo "done t=$(el)"
