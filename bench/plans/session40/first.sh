#!/usr/bin/env bash
# Session 40's first plan (written in session 39, which got no device call), for branch next/s39-overlapped;
# carry .carry/s39f.tar.xz (its binaries and its MOE_SWAP_AB_TIMELINE;MOE_WGMMA_CYCLES measuring build as
# bin/moe-measuring). Switches never run: MOE_WGMMA_OVERLAPPED (off: both wgmma kernels launched by
# programmatic dependent launch, waiting after their ring set-up, their successor launched at once),
# MOE_WGMMA_SWAP_AHEAD (off; session 38: the swapped kernel's pair ids and next tile an item ahead),
# MOE_GROUPING_TILES (on: the grouping lists the GEMM's tiles, one launch fewer), MOE_GROUPING_MIN_CHUNK
# 4096 against 1024 (the one-block grouping up to 512 tokens: two launches fewer at 256 and 512). Here, in
# order of what the next step needs: the grouped-GEMM forced-path test (the new rows' bits against the plain
# rows'), each switch off against on (Qwen3-30B-A3B fp8, two rounds in one process: bench_ab; nvidia-smi's SM clock over the first),
# ncu's time of each kernel of the call at 64 and 256 tokens (where the 45-70 us above the floor go), the
# swapped kernel's cycles (the copier's issuing now split) with the pair ids ahead off and on, then stage 2's
# pair outputs in bf16 from 0 tokens against from 1024 (a runtime setting). Session 40 added (carry s40a,
# built at 3e956bc): with the overlapped launch on, the swapped stage 2's first weights requested before its
# wait (MOE_WGMMA_EARLY_WEIGHTS) off against on.
set -uo pipefail
export END=${END:-480}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s40a.tar.xz || exit 1
grouped_forced_paths 60 300
clocks_start $R/clocks.log
bench_ab $R/overlapped-ab.log MOE_WGMMA_OVERLAPPED 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,256,4096
clocks_stop
pack
MOE_WGMMA_OVERLAPPED=1 bench_ab $R/early-ab.log MOE_WGMMA_EARLY_WEIGHTS 0,1 $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 64,256
pack
bench_ab $R/ahead-ab.log MOE_WGMMA_SWAP_AHEAD 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,256
pack
call_kernels_ncu $B/moe 64 256
bench_ab $R/tiles-ab.log MOE_GROUPING_TILES 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,256
pack
wgmma_cycles $B/moe-measuring MOE_WGMMA_SWAP_AHEAD "0 1" 64,256
bench_ab $R/chunk-ab.log MOE_GROUPING_MIN_CHUNK 1024,4096 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 256,512
pack
bench_ab $R/ybf16-ab.log MOE_GROUPED_Y_BF16_MIN_TOKENS 1024,0 $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 64,256
pack
echo "done t=$(el)"
