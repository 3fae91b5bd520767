#!/usr/bin/env bash
# Session 32, sixth call (or session 33's first). Carry: .carry/s32d-gpu.tar.xz (c4384b1, main's kernels and defaults as session 32
# leaves them). What it runs depends on the card that comes:
# - an H200: quick gpu-check (the targets table's H200 column at main as it lands), then the new defaults
#   against the old on that card (MOE_SWAP_AB_BELOW 48 at 48 and 56 tokens, the joint wave off on
#   DeepSeek-V3) and L2 requests ahead on DeepSeek-V3 full (slower on the H100; the H200 needs more bytes in
#   flight for its bandwidth);
# - an H100 (gpu-check ran there at c4384b1; the fifth call measured the decode step's switches there):
#   MOE_SWAP_AB_WIDE_K_STEPS (8 K warps from 24 K steps) at 16 / 24 / 48, two rounds, on DeepSeek-V3 full and
#   TP8, Qwen3-235B-A22B TP8 (stage 1: 32 steps) and Qwen3-30B-A3B (stage 1: 16 steps) at 1 and 8 tokens.
set -uo pipefail
export END=${END:-380}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s32d-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
if grep -q H200 $R/gpu.txt; then
  quick_gpu_check /tmp/n/bin 90
  pack
  env_ab_rows $R/defaults.log MOE_SWAP_AB_BELOW "48 0" $M --shapes qwen3-30b-a3b,qwen3-235b-a22b-tp8 \
    --formats fp8_block --M 48,56
  env_ab_rows $R/defaults.log MOE_SWAP_AB_JOINT_WAVE "0 -1" $M --shapes deepseek-v3,deepseek-v3-tp8 \
    --formats fp8_block --M 1 --copies 3
  env_ab_rows $R/defaults.log MOE_SWAP_AB_L2_AHEAD "0 1 2" $M --shapes deepseek-v3 --formats fp8_block --M 1 \
    --copies 3
  pivot_rows $R/defaults.log
else
  env_ab_rows $R/wide-k.log MOE_SWAP_AB_WIDE_K_STEPS "24 16 48" $M --shapes deepseek-v3 --formats fp8_block \
    --M 1 --copies 3
  env_ab_rows $R/wide-k.log MOE_SWAP_AB_WIDE_K_STEPS "24 16 48" $M \
    --shapes deepseek-v3-tp8,qwen3-235b-a22b-tp8,qwen3-30b-a3b --formats fp8_block,bf16 --M 1,8
  pivot_rows $R/wide-k.log
fi
pack
echo "done t=$(el)"
