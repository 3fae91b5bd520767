#!/usr/bin/env bash
# Session 40's fourth plan (carry .carry/s40d.tar.xz, built at the commit that adds this plan): the defaults
# as the H100 calls left them (the swapped kernel quantises h, y in bf16 at every M) checked on the card this
# call gets, meant for the H200 column: the grouped-GEMM forced paths, the two new defaults off against on
# (one process, two rounds), the quick gpu-check, Auto's paths at 8-48 tokens (session 38's H200 had the
# grouped GEMM 8 % ahead of the swap-AB stages at 16; the H100 now has them level), ncu's kernels of the call.
set -uo pipefail
export END=${END:-450}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s40d.tar.xz || exit 1
grouped_forced_paths 60 300
clocks_start $R/clocks.log
bench_ab $R/quant-ab.log MOE_WGMMA_SWAP_QUANT_H 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 32,64,256
bench_ab $R/ybf16-ab.log MOE_GROUPED_Y_BF16_MIN_TOKENS 1024,0 $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 64,256
clocks_stop
pack
quick_gpu_check $B 90
pack
path_thresholds $B/moe qwen3-30b-a3b fp8_block 8,16,24,32,48 30
call_kernels_ncu $B/moe 64
pack
echo "done t=$(el)"
