#!/usr/bin/env bash
# Session 40's second plan (carry .carry/s40b.tar.xz, built at the commit that adds this plan; its measuring
# build as bin/moe-measuring). The first call (H100) put the swapped kernel's copier's item set-up at 48 % of
# stage 1's copier time and 66 % of stage 2's (two dependent global round trips between items) while the
# consumers waited on it 52-60 % of theirs: MOE_WGMMA_SWAP_COPIER_AHEAD reads the next item's set-up during
# the current item's steps. Here: that switch off against on and y in bf16 from 0 tokens against 1024 at more
# M (Qwen3-30B-A3B fp8, two rounds in one process), then the consumers' pair ids ahead with the winner, the copier's cycles with it on, then scripts/gpu-check's
# quick form (every GPU test with poisoned memory, the new forced-path rows included; Auto's tables,
# DeepSeek-V3, the decode step) with each switch set as its A/B came out (ab_winner).
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s40b.tar.xz || exit 1
clocks_start $R/clocks.log
bench_ab $R/copier-ab.log MOE_WGMMA_SWAP_COPIER_AHEAD 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 16,64,256
pack
bench_ab $R/ybf16-ab.log MOE_GROUPED_Y_BF16_MIN_TOKENS 1024,0 $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 16,128,512
clocks_stop
pack
MOE_WGMMA_SWAP_COPIER_AHEAD=$(ab_winner $R/copier-ab.log MOE_WGMMA_SWAP_COPIER_AHEAD 0 1)
MOE_GROUPED_Y_BF16_MIN_TOKENS=$(ab_winner $R/ybf16-ab.log MOE_GROUPED_Y_BF16_MIN_TOKENS 1024 0)
export MOE_WGMMA_SWAP_COPIER_AHEAD MOE_GROUPED_Y_BF16_MIN_TOKENS
# The consumers' pair ids an item ahead (flat in the first call, where they waited on the copier), with the
# copier's set-up ahead as it came out.
bench_ab $R/swap-ahead-ab.log MOE_WGMMA_SWAP_AHEAD 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,256
MOE_WGMMA_SWAP_AHEAD=$(ab_winner $R/swap-ahead-ab.log MOE_WGMMA_SWAP_AHEAD 0 1)
export MOE_WGMMA_SWAP_AHEAD
pack
env | grep -E "^MOE_" | sort | tee $R/switches.txt
wgmma_cycles $B/moe-measuring MOE_WGMMA_SWAP_COPIER_AHEAD "1" 64
quick_gpu_check $B 10
grep -E "copier.* fp8_block\] M=400 |DIFFER" $R/gc/gpu-tests.log | head -6
pack
echo "done t=$(el)"
