#!/usr/bin/env bash
# Session 25, a later call (after first.sh, if device time is left): why the MoE op's stages stream at
# 2.4-3.0 TB/s of the card's ~4.6 in the middle of the M range (Qwen3-30B-A3B fp8 M=16..256 at 1.5-1.9x the
# floor against issue 4's 1.15x; bf16 at the same shapes 1.25x) and for DeepSeek-V3 at M=1 (153 us against
# 85.4). ncu of one launch of each stage (speed of light, memory workload, warp states, per-instruction stall
# samples) with the branch's binary: DRAM throughput says whether a stage is at the bandwidth at all; the
# stall reasons whether fp8's waits are on memory (long scoreboard: too few bytes in flight) or on its own
# arithmetic (sm_90 runs e4m3 mma.sync as conversions and f16 MMAs; bf16 streams faster through the same
# kernel). Carry: .carry/s25-gpu.tar.xz.
set -uo pipefail
export END=585
source bench/plans/lib/gpu-env.sh
unpack_carry "${CARRY:-.carry/s25-gpu.tar.xz}" /tmp/n
record_gpu $R/gpu.txt
profile() {  # TAG KERNEL_REGEX MOE_ARGS...
  local tag=$1 k=$2
  shift 2
  BENCH_ARGS="$*" OUT=$R/$tag timeout "$(cap 150 10)" scripts/profile-stalls "$k" /tmp/n/bin/moe > /dev/null 2>&1
  echo "$tag rc $? t=$(el)"
  local csv
  csv=$(ls $R/"$tag"/stalls-*-sass.csv 2>/dev/null | head -1)
  [ -n "$csv" ] && python3 scripts/stall-summary "$csv" 8 | head -12
  grep -E "DRAM Throughput|Memory Throughput|L2 Cache Throughput|Duration|Compute \(SM\) Throughput" \
    $R/"$tag"/stalls-*-details.txt 2>/dev/null | head -6
  rm -f $R/"$tag"/*.ncu-rep
  pack
}
profile qwen-m64-fp8 swap_ab_kernel bench --shapes qwen3-30b-a3b --formats fp8_block --M 64
profile qwen-m64-bf16 swap_ab_kernel bench --shapes qwen3-30b-a3b --formats bf16 --M 64
profile qwen-m256-fp8 expert_wgmma_swap bench --shapes qwen3-30b-a3b --formats fp8_block --M 256
profile dsv3-m1-fp8 swap_ab_kernel bench --shapes deepseek-v3 --formats fp8_block --M 1
echo "done t=$(el)"
