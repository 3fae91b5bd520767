#!/usr/bin/env bash
# Session 32, fourth call. Carry: .carry/s32d-gpu.tar.xz (c4384b1: stage 2's combine back to rows, Auto's
# swap-AB threshold 64 / 48 / 32 and the joint wave by hidden size). Quick gpu-check of what lands, then the
# new defaults against the old ones by their environment switches: Auto at 48 and 56 tokens (MOE_SWAP_AB_BELOW
# 48 against the default) and at 24, 28 on DeepSeek-V3 TP8; the joint wave on DeepSeek-V3 full and TP8 at one
# token (MOE_SWAP_AB_JOINT_WAVE 0 against the default).
set -uo pipefail
export END=${END:-420}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s32d-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
quick_gpu_check /tmp/n/bin 90
pack
env_ab_rows $R/defaults.log MOE_SWAP_AB_BELOW "48 0" $M --shapes qwen3-30b-a3b,qwen3-235b-a22b-tp8 \
  --formats fp8_block --M 48,56
env_ab_rows $R/defaults.log MOE_SWAP_AB_BELOW "24 0" $M --shapes deepseek-v3-tp8 --formats fp8_block --M 24,28
env_ab_rows $R/defaults.log MOE_SWAP_AB_JOINT_WAVE "0 -1" $M --shapes deepseek-v3,deepseek-v3-tp8 \
  --formats fp8_block --M 1 --copies 3
pivot_rows $R/defaults.log
pack
echo "done t=$(el)"
