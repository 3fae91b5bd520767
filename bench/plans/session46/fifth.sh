#!/usr/bin/env bash
# Session 46's last call with ~270 s of device time left (carry .carry/s46b.tar.xz, main at 48097f6: Auto's
# Qwen3-Next bf16 threshold at 16 tokens): the fused-MoE GPU test at every M on the four shapes (poisoned,
# against the CPU reference; Qwen3-Next bf16 at 16 and 31 tokens now on the grouped GEMM), then Auto against
# both forced paths for Qwen3-Next bf16 at 8-32 tokens.
set -uo pipefail
export END=${END:-140}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s46b.tar.xz}" || exit 1
timeout "$(cap 70 40)" $B/cuda_fused_moe_test --gtest_color=no --gtest_filter='Shapes/FusedMoeGpu.*' \
  > $R/fused-moe.log 2>&1
echo "fused moe test rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|Failure|qwen3-next-80b-a3b bf16\] M=(8|16|31) " $R/fused-moe.log | head -8
pack
PT_PATHS=mma,swap-ab path_thresholds $B/moe qwen3-next-80b-a3b bf16 8,12,16,24,32 3
pack
echo "done t=$(el)"
