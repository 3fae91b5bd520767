#!/usr/bin/env bash
# Session 32 (written in session 31, not yet run). Carry: .carry/s32b-gpu.tar.xz (branch next/s32-shared-early:
# MOE_SHARED_EARLY, NOT RUN ON A GPU: in calls of up to 8 tokens the shared expert's stages start before the
# prologue, on a side stream, from x quantised by a one-block kernel of their own (shared_prep.cu) and their
# identity grouping; the prologue then writes only the gate). cuda_fused_moe_test first (its shared-expert
# test compares the early path's bits, directly and from a graph), then MOE_SHARED_EARLY 0 / 1, two rounds:
# DeepSeek-V3 full fp8 M=1,2,8 (3 copies), its TP8 shard and Qwen3-Next fp8 and bf16 M=1,8.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s32b-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
timeout 120 /tmp/n/bin/cuda_fused_moe_test --gtest_color=no > $R/fused-test.log 2>&1
echo "cuda_fused_moe_test rc $? t=$(el)"
grep -E "^\[  FAILED|^\[  PASSED" $R/fused-test.log | head -4
pack
env_ab_rows $R/shared-early-ab.log MOE_SHARED_EARLY "0 1" $M --shapes deepseek-v3 --formats fp8_block --M 1,2,8 \
  --copies 3
env_ab_rows $R/shared-early-ab.log MOE_SHARED_EARLY "0 1" $M --shapes deepseek-v3-tp8,qwen3-next-80b-a3b \
  --formats fp8_block,bf16 --M 1,8
pack
pivot_rows $R/shared-early-ab.log
echo "done t=$(el)"
