#!/usr/bin/env bash
# Session 32, seventh call. Carry: .carry/s32e-gpu.tar.xz (main with SwapAbArgs' combine counters as one
# pointer and count for both stages: session 31's review note; no kernel arithmetic changed). Quick gpu-check
# (its tests cover stage 2's combine at 1-8 tokens, bit for bit, directly and from graphs), then on any card
# the shared warm's size with the joint wave now on for DeepSeek (MOE_SHARED_WARM_KB 0 / 4096 / 8192 / 16384,
# two rounds), and on an H200 the new defaults against the old and L2 requests ahead on DeepSeek-V3 full.
set -uo pipefail
export END=${END:-330}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s32e-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
quick_gpu_check /tmp/n/bin 60
pack
env_ab_rows $R/warm.log MOE_SHARED_WARM_KB "0 4096 8192 16384" $M --shapes deepseek-v3 --formats fp8_block \
  --M 1 --copies 3
env_ab_rows $R/warm.log MOE_SHARED_WARM_KB "0 4096 8192 16384" $M --shapes deepseek-v3-tp8 --formats fp8_block \
  --M 1
pivot_rows $R/warm.log
pack
if grep -q H200 $R/gpu.txt; then
  env_ab_rows $R/defaults.log MOE_SWAP_AB_BELOW "48 0" $M --shapes qwen3-30b-a3b,qwen3-235b-a22b-tp8 \
    --formats fp8_block --M 48,56
  env_ab_rows $R/defaults.log MOE_SWAP_AB_JOINT_WAVE "0 -1" $M --shapes deepseek-v3 --formats fp8_block --M 1 \
    --copies 3
  env_ab_rows $R/defaults.log MOE_SWAP_AB_L2_AHEAD "0 1 2" $M --shapes deepseek-v3 --formats fp8_block --M 1 \
    --copies 3
  pivot_rows $R/defaults.log
fi
pack
echo "done t=$(el)"
