#!/usr/bin/env bash
# Session 28, third call (branch next/s28b; carry .carry/s28c-gpu.tar.xz): Auto's new threshold by shape
# (auto_swap_ab_below: 48 tokens where H <= 4096, 4-24 where H > 4096) and two partials in stage 2 where
# its K takes at most two steps (the second call: DeepSeek-V3 TP8 and Qwen3-235B-A22B TP8 2-4 % faster).
# The second call's gpu-check failed two tests that assumed the old threshold (batch invariance at M=64
# across the new switch; fp8 pairs early at 40 and 100 tokens on Auto): now within the swap-AB range /
# forced. Steps:
#  1. gpu-check (tests, cases, fixtures, benchmarks) at the branch's defaults;
#  2. Auto at the shapes and token counts the threshold moved (DeepSeek-V3 full and TP8, Qwen3-Next);
#  3. every kernel of a call (scripts/op-kernel-times) at Qwen3-30B-A3B fp8 M=8, 64, 256 (1.31x, 1.19x and
#     1.38x their floors) and DeepSeek-V3 fp8 M=1 (1.5x): which launch is far from its share.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s28c-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin 150
pack
{
  timeout 40 /tmp/n/bin/moe bench --shapes deepseek-v3,deepseek-v3-tp8 --formats fp8_block,bf16 --M 2,4,8,12,16,24,32
  timeout 30 /tmp/n/bin/moe bench --shapes qwen3-next-80b-a3b,qwen3-235b-a22b-tp8 --formats fp8_block,bf16 --M 32,48,64
} 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" > $R/auto-moved.log
cut -c1-100 $R/auto-moved.log
echo "auto rows t=$(el)"
pack
for row in "qwen3-30b-a3b fp8_block 8" "qwen3-30b-a3b fp8_block 64" "qwen3-30b-a3b fp8_block 256" \
  "deepseek-v3 fp8_block 1"; do
  # shellcheck disable=SC2086
  MOE_BIN=/tmp/n/bin timeout "$(cap 40 5)" scripts/op-kernel-times $row
done > $R/op-kernel-times.log 2>&1
cat $R/op-kernel-times.log
pack
echo "done t=$(el)"
