#!/usr/bin/env bash
# Session 28, fourth call (main after landing next/s28b; carry .carry/s28d-gpu.tar.xz): gpu-check at the
# landed defaults (Auto's threshold by shape, two partials in short-K fp8 stage 2, the one-partial loop
# through issue / finish), the two partials' A/B in the same lease, and two reads for the next session:
# every kernel of a DeepSeek-V3 fp8 M=1 call (1.5x its floor) and the warp stalls of the swapped wgmma
# kernel's stage 2 at Qwen3-30B-A3B fp8 M=256 (85.7 us at 76 % of DRAM peak against 63 us of weights).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s28d-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin 150
pack
for round in 1 2; do
  for v in -1 0; do
    MOE_WGMMA_TWO_PARTS=$v timeout 40 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 \
      --formats fp8_block --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/round=$round two=$v /"
  done
done > $R/ab-two-parts.log
cut -c1-80 $R/ab-two-parts.log
echo "two parts a/b t=$(el)"
pack
OPK_SKIP=40 MOE_BIN=/tmp/n/bin timeout "$(cap 70 60)" scripts/op-kernel-times deepseek-v3 fp8_block 1 > $R/op-kernel-times-dsv3.log 2>&1
echo "op kernel times rc $? t=$(el)"
cat $R/op-kernel-times-dsv3.log | tail -14
pack
mkdir -p $R/st
MOE_BIN=/tmp/n/bin NCU_SKIP=8 OUT=$R/st/swapped-stage2-m256 BENCH_ARGS="bench --shapes qwen3-30b-a3b --formats fp8_block --M 256" \
  timeout "$(cap 60 5)" scripts/profile-stalls 'expert_wgmma_swap_kernel<1, 2' 2>&1 | tail -1
rm -f $R/st/*/*.ncu-rep
grep -E "Duration|DRAM Throughput|Stall (Long|Wait|Barrier|Short)" $R/st/*/*details.txt | head -8
pack
echo "done t=$(el)"
