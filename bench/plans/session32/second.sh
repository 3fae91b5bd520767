#!/usr/bin/env bash
# Session 32, second call. Carry: .carry/s32b-gpu.tar.xz (main with MOE_SHARED_EARLY taken out again: the
# first call measured it slower everywhere). The first call came on an H200, the first since session 23, and
# every default since session 24 was chosen on H100s; so this call asks the H200 about them:
# 1. quick gpu-check of what will land (tests, cases, fixtures, benchmarks);
# 2. the op's switches, two rounds each: MOE_SWAP_AB_L2_AHEAD 0-3, MOE_SHARED_WARM_KB 0 / 8192 / 16384,
#    MOE_SWAP_AB_JOINT_WAVE, MOE_COUNTER_WAITS, MOE_SWAP_AB_BALANCED_K -1 / 0 / 1, MOE_SWAP_AB_FP8_PAIRS_EARLY;
# 3. scripts/path-thresholds at 16-128 tokens (Auto's switch to the grouped GEMM was set on an H100);
# 4. the decode step with MOE_ATTENTION_SPLIT_KEYS 64 / 128 / 256 and MOE_SWAP_AB_L2_AHEAD 0 / 2.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s32b-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
quick_gpu_check /tmp/n/bin 300
pack
q30=(--shapes qwen3-30b-a3b --formats fp8_block --M "1,8")
ds=(--shapes deepseek-v3 --formats fp8_block --M 1 --copies 3)
env_ab_rows $R/switches.log MOE_SWAP_AB_L2_AHEAD "0 1 2 3" $M "${q30[@]}"
env_ab_rows $R/switches.log MOE_SWAP_AB_L2_AHEAD "0 1 2 3" $M "${ds[@]}"
env_ab_rows $R/switches.log MOE_SWAP_AB_L2_AHEAD "0 1 2 3" $M --shapes deepseek-v3-tp8 --formats fp8_block --M 1,8
pack
env_ab_rows $R/switches.log MOE_SHARED_WARM_KB "0 8192 16384" $M "${ds[@]}"
env_ab_rows $R/switches.log MOE_SHARED_WARM_KB "0 8192 16384" $M --shapes qwen3-next-80b-a3b,deepseek-v3-tp8 \
  --formats fp8_block --M 1
env_ab_rows $R/switches.log MOE_SWAP_AB_JOINT_WAVE "0 1" $M --shapes deepseek-v3-tp8,qwen3-next-80b-a3b \
  --formats fp8_block --M 1,8
env_ab_rows $R/switches.log MOE_COUNTER_WAITS "0 1" $M --shapes qwen3-30b-a3b,qwen3-235b-a22b-tp8 \
  --formats fp8_block,bf16 --M 1,8
env_ab_rows $R/switches.log MOE_SWAP_AB_BALANCED_K "-1 0 1" $M --shapes qwen3-30b-a3b --formats fp8_block \
  --M 1,4,8,16
env_ab_rows $R/switches.log MOE_SWAP_AB_FP8_PAIRS_EARLY "0 1" $M "${q30[@]}"
pack
pivot_rows $R/switches.log
PT_SHAPES=qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 PT_M=16,24,32,48,64,96,128 \
  timeout "$(cap 150 60)" scripts/path-thresholds $M > $R/path-thresholds.log 2>/dev/null
cat $R/path-thresholds.log
pack
[ "$(cap 60 0)" -ge 60 ] && decode_ab $M $R/decode-split-keys.log MOE_ATTENTION_SPLIT_KEYS 64 128 256 64 128 256
[ "$(cap 40 0)" -ge 40 ] && decode_ab $M $R/decode-l2-ahead.log MOE_SWAP_AB_L2_AHEAD 0 2 0 2
pack
echo "done t=$(el)"
