#!/usr/bin/env bash
# Session 25, fourth call (short). The consumers' item loads ahead (MOE_WGMMA_AHEAD=1, on next/s26; NOT
# RUN ON A GPU before this call): its same-bits rows, an A/B at M = 1024 and 4096 (alternated), and the cycle
# accounting with it on. Carry: .carry/s25b-gpu.tar.xz (scripts/pack-gpu-carry build) and
# .carry/cycles25b.tar.xz (bin/moe with expert_wgmma.cu compiled with -DMOE_WGMMA_CYCLES).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s25b-gpu.tar.xz /tmp/n
mkdir -p /tmp/c && tar -C /tmp/c -xJf .carry/cycles25b.tar.xz
record_gpu $R/gpu.txt
timeout 60 /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' > $R/ahead-tests.log 2>&1
echo "grouped GEMM rows (ahead) rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure|ahead.*M=400 " $R/ahead-tests.log | head -12
pack
for v in 0 1 0 1; do
  MOE_WGMMA_AHEAD=$v timeout 30 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8 --formats fp8_block \
    --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/ahead=$v /"
done > $R/ahead-ab.log
cat $R/ahead-ab.log
echo "t=$(el)"
pack
for v in 1 0; do
  MOE_WGMMA_AHEAD=$v timeout 30 /tmp/c/bin/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096 \
    > "$R/cycles-ahead$v.log" 2>&1
  echo "cycles ahead=$v rc $? t=$(el)"
  grep -E "^qwen|stage [12]" "$R/cycles-ahead$v.log" | cut -c1-300
done
pack
echo "done t=$(el)"
