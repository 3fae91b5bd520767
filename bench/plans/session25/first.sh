#!/usr/bin/env bash
# Session 25, first call: branch next/s25 (NOT RUN ON A GPU before this call). It holds session 24's
# next/warm-norm and next/no-warp-align (both prepared in session 23) and session 24's work:
#  - the grouped GEMM's consumer warpgroups in turn (MOE_WGMMA_TURNS=1 after issue, 2 after done; 0, off,
#    by default): its same-bits rows, then M = 1024 and 4096 with 0 / 1 / 2 alternated on three shapes;
#  - the decode kernels' parameters read before the programmatic wait and the router kind compiled in
#    (no switch: the branch's binary against main's, model and MoE op);
#  - the norm's instructions run once before the wait (MOE_NORM_WARMUP=1, off), alternated;
#  - the measuring build's timeline with the warm-up off and on.
# Carry: .carry/s25-gpu.tar.xz (scripts/pack-gpu-carry build at the branch), .carry/s24-main-moe.tar.xz
# (bin/moe with main's kernels, edaacb7 = c7e50d9's) and .carry/measuring25.tar.xz (scripts/build-measuring
# MOE_KERNEL_TIMELINE at the branch, bin/moe).
set -uo pipefail
export END=585
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s25-gpu.tar.xz /tmp/n
mkdir -p /tmp/o /tmp/m && tar -C /tmp/o -xJf .carry/s24-main-moe.tar.xz && tar -C /tmp/m -xJf .carry/measuring25.tar.xz
record_gpu $R/gpu.txt
timeout 150 /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' > $R/turns-tests.log 2>&1
echo "grouped GEMM rows (turns) rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure|turns" $R/turns-tests.log | grep -E "FAILED|PASSED|Failure|M=400 " | head -10
timeout 150 /tmp/n/bin/cuda_model_test --gtest_filter='cuda_model_router*:cuda_model_gemv*' > $R/tests.log 2>&1
echo "router and gemv tests rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure" $R/tests.log | head -8
pack
for t in 0 1 2 0 1 2; do
  MOE_WGMMA_TURNS=$t timeout 60 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 \
    --formats fp8_block --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/turns=$t /"
  MOE_WGMMA_TURNS=$t timeout 60 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b --formats bf16 --M 4096 2>&1 |
    grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/turns=$t /"
done > $R/turns-ab.log
cat $R/turns-ab.log
echo "t=$(el)"
pack
decode_ab /tmp/n/bin/moe $R/warm-ab.log MOE_NORM_WARMUP 1 0 1 0
pack
binaries_ab $R/main-ab.log /tmp/n/bin/moe /tmp/o/bin/moe 2
pack
for _ in 1 2; do
  for run in new old; do
    bin=/tmp/n/bin/moe
    [ $run = old ] && bin=/tmp/o/bin/moe
    timeout 60 $bin bench --shapes qwen3-30b-a3b,qwen3-next-80b-a3b --formats fp8_block --M 1,2,8,16,64 2>&1 |
      grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/$run /"
  done
done > $R/moe-main-ab.log
cat $R/moe-main-ab.log
echo "t=$(el)"
pack
timeline /tmp/m/bin/moe $R/timeline-off.log MOE_NORM_WARMUP=0
timeline /tmp/m/bin/moe $R/timeline-warm.log MOE_NORM_WARMUP=1
pack
echo "done t=$(el)"
