#!/usr/bin/env bash
# Session 25, third call (short: little device time left). The grouped GEMM's cycle accounting at M=4096 and
# 1024 (Qwen3-30B-A3B fp8, and bf16 at 4096): per K step, how long the consumer warps wait for a full slot,
# for their wgmma, in the promotion and in epilogues; how long the copier waits for an empty slot. Then
# h quantised in stage 1's epilogue (MOE_WGMMA_QUANT_H) against off, and ncu's stall profile of stage 2.
# Carry: .carry/s26-gpu.tar.xz (b831e95) and .carry/cycles25.tar.xz (bin/moe: the same build with
# expert_wgmma.cu compiled with -DMOE_WGMMA_CYCLES and relinked).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s26-gpu.tar.xz /tmp/n
mkdir -p /tmp/c && tar -C /tmp/c -xJf .carry/cycles25.tar.xz
record_gpu $R/gpu.txt
for args in "fp8_block --M 4096" "fp8_block --M 1024" "bf16 --M 4096"; do
  # shellcheck disable=SC2086
  timeout 60 /tmp/c/bin/moe bench --shapes qwen3-30b-a3b --formats $args > "$R/cycles-${args// /_}.log" 2>&1
  echo "cycles $args rc $? t=$(el)"
  grep -E "^qwen|stage [12]" "$R/cycles-${args// /_}.log" | cut -c1-400
done
pack
for q in 0 1 0 1; do
  [ "$(cap 30 5)" -lt 30 ] && break
  MOE_WGMMA_QUANT_H=$q timeout 40 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b --formats fp8_block \
    --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/quant_h=$q /"
done > $R/quant-h-ab.log
cat $R/quant-h-ab.log
echo "t=$(el)"
pack
if [ "$(cap 90 5)" -ge 90 ]; then
  NCU_SKIP=3 BENCH_ARGS="bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096" OUT=$R/m4096-stage2 \
    timeout "$(cap 150 5)" scripts/profile-stalls expert_wgmma_kernel /tmp/n/bin/moe > $R/m4096-stage2.log 2>&1
  echo "stage 2 stalls rc $? t=$(el)"
  csv=$(ls $R/m4096-stage2/stalls-*-sass.csv 2>/dev/null | head -1)
  [ -n "$csv" ] && python3 scripts/stall-summary "$csv" 16 | head -22
  rm -f $R/m4096-stage2/*.ncu-rep
  pack
fi
echo "done t=$(el)"
