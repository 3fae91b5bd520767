#!/usr/bin/env bash
# Session 28, first call (from main or branch next/s28-two-parts). Session 27 landed next/s27's epilogues and
# put staged outputs on by default (H100: Qwen3-30B-A3B fp8 M=4096 661 us, 467 TFLOP/s); nothing since session
# 23 has run on an H200. The carry is built from next/s28-two-parts (9a4535c): main's kernels with identical
# SASS (all 19 compared) plus fp8's two partials behind MOE_WGMMA_TWO_PARTS (off; NOT RUN ON A GPU).
# Steps:
#  0. the grouped-GEMM rows tests (the two-partials rows: the same bits as the defaults) and the A/B of
#     MOE_WGMMA_TWO_PARTS=1 against the defaults (M=1024 and 4096, three shapes, two rounds);
#  1. gpu-check with its benchmarks at main's defaults (the targets table's figures; on an H200 if one comes);
#  2. Auto's choice for the large-hidden shapes below 128 tokens (DeepSeek-V3 TP8 fp8 M=64 took the swap-AB
#     stages at 587.6 us, 3.11x its floor, slower than its own M=256 on the grouped GEMM, 418.8 us): Auto,
#     mma and swap-ab at M=16..256;
#  3. ncu warp stalls of the swapped wgmma kernel at Qwen3-30B-A3B fp8 M=256 (1.40x its floor, target 1.15x)
#     and of the swap-AB stage 1 at DeepSeek-V3 TP8 fp8 M=64.
# Carry: .carry/s28a-gpu.tar.xz (scripts/pack-gpu-carry build at next/s28-two-parts) and .carry/cycles-s28a.tar.xz
# (the branch's bin/moe with -DMOE_WGMMA_CYCLES in expert_wgmma.cu).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s28a-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
timeout 150 /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' > $R/rows-tests.log 2>&1
echo "grouped GEMM rows rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure|two parts.*M=400 " $R/rows-tests.log | head -12
for round in 1 2; do
  for v in 0 1; do
    MOE_WGMMA_TWO_PARTS=$v timeout 60 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 \
      --formats fp8_block --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/round=$round two=$v /"
  done
done > $R/ab-two-parts.log
cut -c1-110 $R/ab-two-parts.log
echo "two parts a/b t=$(el)"
mkdir -p /tmp/c && tar -C /tmp/c -xJf .carry/cycles-s28a.tar.xz
for v in 0 1; do
  MOE_WGMMA_TWO_PARTS=$v timeout 30 /tmp/c/bin/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096 \
    > "$R/cycles-two-$v.log" 2>&1
  echo "cycles two=$v rc $? t=$(el)"
  grep -E "^qwen|stage [12]" "$R/cycles-two-$v.log" | cut -c1-260
done
pack
quick_gpu_check /tmp/n/bin 190  # (190 s kept for the rest)
pack
PT_SHAPES=deepseek-v3-tp8,qwen3-235b-a22b-tp8,qwen3-30b-a3b PT_FORMATS=fp8_block,bf16 PT_M=16,32,48,64,96,128,192,256 \
  timeout "$(cap 120 80)" scripts/path-thresholds /tmp/n/bin/moe > $R/path-thresholds.log 2>&1
echo "path thresholds rc $? t=$(el)"
cat $R/path-thresholds.log | grep -v "^path-thresholds:" | cut -c1-110
pack
mkdir -p $R/st
MOE_BIN=/tmp/n/bin NCU_SKIP=8 OUT=$R/st/swapped-m256 BENCH_ARGS="bench --shapes qwen3-30b-a3b --formats fp8_block --M 256" \
  timeout "$(cap 60 20)" scripts/profile-stalls expert_wgmma_swap 2>&1 | tail -1
MOE_BIN=/tmp/n/bin NCU_SKIP=8 OUT=$R/st/swap-ab-dsv3-m64 BENCH_ARGS="bench --shapes deepseek-v3-tp8 --formats fp8_block --M 64" \
  timeout "$(cap 60 5)" scripts/profile-stalls swap_ab 2>&1 | tail -1
rm -f $R/st/*/*.ncu-rep
for d in $R/st/*/; do grep -E "^  [a-z].*\(|Duration" "$d"/*details.txt 2>/dev/null | head -2; done
pack
echo "done t=$(el)"
