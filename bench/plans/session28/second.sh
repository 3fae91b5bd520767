#!/usr/bin/env bash
# Session 28, second call (branch next/s28b at 57166aa; carry .carry/s28b-gpu.tar.xz). The first call had
# the two partials mixed (Qwen3-30B-A3B fp8 M=4096 678 against 660 us; DeepSeek-V3 TP8 1170-1184 against
# 1199-1209, Qwen3-235B-A22B TP8 535-540 against 555) and the grouped GEMM faster than the swap-AB stages from
# 64 tokens (H <= 4096) and from 32 (DeepSeek-V3 TP8 fp8): Auto now follows that (auto_swap_ab_below).
# Steps:
#  0. the grouped-GEMM rows tests;
#  1. the two partials per stage (MOE_WGMMA_TWO_PARTS 0-3: bit 1 stage 1, bit 2 stage 2), two rounds;
#  2. Auto against the forced paths where the new threshold has no data: DeepSeek-V3 (full and TP8) at 1-32
#     tokens (the grouped GEMM's deep TMA ring might stream H = 7168 better than the swap-AB stages even at
#     M=1), Qwen3-Next-80B-A3B (512 experts) at 16-256;
#  3. gpu-check with the new Auto (its tests, cases, fixtures and the targets table).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s28b-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
timeout 150 /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' > $R/rows-tests.log 2>&1
echo "grouped GEMM rows rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure" $R/rows-tests.log | head -6
for round in 1 2; do
  for v in 0 1 2 3; do
    MOE_WGMMA_TWO_PARTS=$v timeout 60 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 \
      --formats fp8_block --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/round=$round two=$v /"
  done
done > $R/ab-two-parts.log
cut -c1-80 $R/ab-two-parts.log
echo "two parts a/b t=$(el)"
pack
PT_SHAPES=deepseek-v3,deepseek-v3-tp8 PT_FORMATS=fp8_block,bf16 PT_M=1,2,4,8,12,16,24,32 PT_PATHS=mma,swap-ab \
  timeout "$(cap 150 200)" scripts/path-thresholds /tmp/n/bin/moe > $R/path-thresholds-dsv3.log 2>&1
echo "path thresholds (DeepSeek-V3) rc $? t=$(el)"
grep -v "^path-thresholds:" $R/path-thresholds-dsv3.log | cut -c1-100
pack
PT_SHAPES=qwen3-next-80b-a3b PT_FORMATS=fp8_block,bf16 PT_M=16,32,48,64,96,128,192,256 PT_PATHS=mma,swap-ab \
  timeout "$(cap 60 180)" scripts/path-thresholds /tmp/n/bin/moe > $R/path-thresholds-next.log 2>&1
echo "path thresholds (Qwen3-Next) rc $? t=$(el)"
grep -v "^path-thresholds:" $R/path-thresholds-next.log | cut -c1-100
pack
quick_gpu_check /tmp/n/bin 5
pack
echo "done t=$(el)"
