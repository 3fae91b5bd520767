#!/usr/bin/env bash
# Session 39's plan for little device time (first.sh's gpu-check does not fit): branch next/s38-swap-ahead's
# grouped-GEMM forced-path test (its pair-ids-ahead row's bits against the per-box rows'), Auto's
# Qwen3-30B-A3B table (the H200 column), MOE_WGMMA_SWAP_AHEAD off against on. Carry: .carry/s39.tar.xz.
set -uo pipefail
export END=${END:-170}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s39.tar.xz || exit 1
timeout "$(cap 40 100)" $B/cuda_forced_paths_test --gtest_color=no --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' \
  > $R/forced-paths.log 2>&1
echo "forced paths rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|Failure|pair ids ahead fp8_block\] M=400 " $R/forced-paths.log | head -8
timeout "$(cap 60 50)" $B/moe bench --shapes qwen3-30b-a3b --formats fp8_block,bf16 --json $R/bench-qwen3-30b.json \
  > $R/bench.log 2>&1
grep -E "^qwen" $R/bench.log | head -30
pack
env_ab_rows $R/ahead-ab.log MOE_WGMMA_SWAP_AHEAD "0 1" $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block,bf16 --M 64,128,256
pivot_rows $R/ahead-ab.log
pack
echo "done t=$(el)"
