#!/usr/bin/env bash
# Session 27, third call (branch next/s27b at the stmatrix commit). The first call measured the branch (next/s27's
# epilogue changes) against main, and staged outputs (then one switch, 4-byte shared stores) on an H100:
# Qwen3-30B-A3B fp8 M=4096 700.7 against main's 778.5 us, staged 695.7; bf16 894.6 / 906.0 / 877.9; DeepSeek-V3
# TP8 fp8 M=1024 557 / 655 / 595 (staged slower there). ncu at M=4096: stage 2 240 -> 223 us staged, stage 1
# 360 -> 365. Now staged by stage (MOE_WGMMA_STAGED_H, MOE_WGMMA_STAGED_Y) with stmatrix.
# Steps: the grouped-GEMM rows tests (staged rows); the A/B of off / Y / H / both; DeepSeek-V3 full at M=4096;
# the cycle accounting (cycles-s27c: -DMOE_WGMMA_CYCLES) off / Y / both; gpu-check with MOE_WGMMA_STAGED_Y=1.
# Carry: .carry/s27c-gpu.tar.xz and .carry/cycles-s27c.tar.xz.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s27c-gpu.tar.xz /tmp/n
mkdir -p /tmp/c && tar -C /tmp/c -xJf .carry/cycles-s27c.tar.xz
record_gpu $R/gpu.txt
timeout 150 /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' > $R/rows-tests.log 2>&1
echo "grouped GEMM rows rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure|staged.*M=400 " $R/rows-tests.log | head -16
pack
side_env() {
  case $1 in
    y) echo MOE_WGMMA_STAGED_Y=1 ;;
    h) echo MOE_WGMMA_STAGED_H=1 ;;
    hy) echo MOE_WGMMA_STAGED_H=1 MOE_WGMMA_STAGED_Y=1 ;;
    *) echo MOE_NONE=0 ;;
  esac
}
for round in 1 2; do
  for side in off y h hy; do
    # shellcheck disable=SC2046
    env $(side_env $side) timeout 60 /tmp/n/bin/moe bench --shapes qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 \
      --formats fp8_block,bf16 --M 256,1024,4096 2>&1 | grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" |
      sed "s/^/round=$round $side /"
  done
done > $R/ab-ops.log
awk '$5 >= 1024' $R/ab-ops.log | cut -c1-110
echo "ops a/b t=$(el)"
pack
for side in off y hy; do
  # shellcheck disable=SC2046
  env $(side_env $side) timeout 60 /tmp/n/bin/moe bench --shapes deepseek-v3 --formats fp8_block,bf16 --M 4096 2>&1 |
    grep -E "^[a-z0-9-]+ +(fp8|bf16)|rror" | sed "s/^/$side /"
done > $R/ab-dsv3.log
cut -c1-110 $R/ab-dsv3.log
echo "deepseek-v3 a/b t=$(el)"
pack
for side in off y hy; do
  # shellcheck disable=SC2046
  env $(side_env $side) timeout 30 /tmp/c/bin/moe bench --shapes qwen3-30b-a3b --formats fp8_block --M 4096 \
    > "$R/cycles-$side.log" 2>&1
  echo "cycles $side rc $? t=$(el)"
  grep -E "^qwen|stage [12]" "$R/cycles-$side.log" | cut -c1-260
done
pack
export MOE_WGMMA_STAGED_Y=1
quick_gpu_check /tmp/n/bin 10
pack
echo "done t=$(el)"
