#!/usr/bin/env bash
# Session 25, second call. The first call's ncu (H100, Qwen3-30B-A3B fp8 M=4096, per call): stage 1 447 us
# (461 TFLOP/s), stage 2 293 us (352 TFLOP/s), combine 51, h's fp8_rows 37, route 19, align 14, tile list 4.
# Stage 2 (K = 768: 6 K steps per 128x128 item) runs at three quarters of stage 1's rate: where do its
# consumer warps stall (the epilogue's scattered stores, the promotion, an empty ring)? Then stage 1 the
# same way, and h quantised in stage 1's epilogue (MOE_WGMMA_QUANT_H=1, runtime switch: it would remove the
# 37 us fp8_rows launch) against off, alternated. Carry: .carry/s26-gpu.tar.xz (as the first call).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s26-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
for q in 0 1 0 1; do
  MOE_WGMMA_QUANT_H=$q timeout 60 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8 --formats fp8_block \
    --M 1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/quant_h=$q /"
done > $R/quant-h-ab.log
cat $R/quant-h-ab.log
echo "t=$(el)"
pack
profile() {  # TAG KERNEL_REGEX LAUNCH_SKIP MOE_ARGS...
  local tag=$1 k=$2 skip=$3
  shift 3
  [ "$(cap 60 5)" -lt 60 ] && { echo "$tag skipped (time) t=$(el)"; return; }
  NCU_SKIP=$skip BENCH_ARGS="$*" OUT=$R/$tag timeout "$(cap 200 5)" scripts/profile-stalls "$k" /tmp/n/bin/moe \
    > $R/"$tag".log 2>&1
  echo "$tag rc $? t=$(el)"
  local csv
  csv=$(ls $R/"$tag"/stalls-*-sass.csv 2>/dev/null | head -1)
  [ -n "$csv" ] && python3 scripts/stall-summary "$csv" 16 | head -22
  grep -E "DRAM Throughput|Memory Throughput|L2 Cache Throughput|Duration|Compute \(SM\) Throughput" \
    $R/"$tag"/stalls-*-details.txt 2>/dev/null | head -6
  rm -f $R/"$tag"/*.ncu-rep
  pack
}
# The bench's launches of expert_wgmma_kernel alternate stage 1, stage 2: launch 3 is a stage 2.
profile m4096-stage2 expert_wgmma_kernel 3 bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096
profile m4096-stage1 expert_wgmma_kernel 2 bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096
echo "done t=$(el)"
