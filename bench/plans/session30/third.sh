#!/usr/bin/env bash
# Session 30, third call. Carries: .carry/s30p-gpu.tar.xz (branch next/s30-pingpong at 6a807ef, NOT RUN ON A
# GPU: the swap-AB K loop in pairs over two register sets, so a step's loads go out before the wait for the
# one before; at 8cca4bc the loop copied `ahead` into `cur` first, and the copy waited for the loads: one
# step in flight per warp. The fp8 one-column-tile kernels now spill 44-68 bytes) and .carry/s30s-moe.tar.xz
# (bin/moe at 8cca4bc, main).
#  1. main against the branch, two rounds: Qwen3-30B-A3B fp8 and bf16 M = 1..64, DeepSeek-V3 TP8 and
#     Qwen3-235B-A22B TP8 fp8 M = 1, 8, DeepSeek-V3 full fp8 M=1; the decode step alternated three times;
#  2. gpu-check of the branch (the same bits: its GPU tests compare with the reference and across runs).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry "${CARRY:-.carry/s30p-gpu.tar.xz}" /tmp/n  # CARRY=.carry/s30p-moe.tar.xz: bin/moe and lib/ only, the A/B alone
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s30s-moe.tar.xz
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
{
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4,8,16,64
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes deepseek-v3-tp8,qwen3-235b-a22b-tp8 --formats fp8_block --M 1,8
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
} > $R/ab-pingpong.log
cut -c1-90 $R/ab-pingpong.log | grep -E " (1|8|64) "
binaries_ab $R/decode-ab.log /tmp/n/bin/moe /tmp/m/bin/moe 3
echo "a/b t=$(el)"
pack
[ -x /tmp/n/bin/cuda_fused_moe_test ] || { echo "no tests carried: A/B only"; exit 0; }
quick_gpu_check /tmp/n/bin 5
grep -E "^deepseek-v3 " $R/gc/bench.log | head -2
pack
echo "done t=$(el)"
