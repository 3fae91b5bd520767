#!/usr/bin/env bash
# Session 30, second call. Carries: .carry/s30s-gpu.tar.xz (branch next/s30-stage, NOT RUN ON A GPU yet:
# (a) the swap-AB fp8 stage's row staging takes a row's scales with its codes from one pair read (its SASS
# had sorted, codes, sorted, scale: three round trips where two do), two items a thread per trip in the
# 8-token passes (DeepSeek's 7168-wide rows: 448 chunks, two items a thread for one token); (b) decode
# attention's storing block reads the new key's page before its wait, not after the barrier) and
# .carry/s30-main-moe.tar.xz (now main's bin/moe: the s30b build at acb2f53, main 4be7dba's kernels).
#  1. main against the branch: Qwen3-30B-A3B fp8 M = 1..64, DeepSeek-V3 TP8 fp8 M = 1..8, Qwen3-235B-A22B
#     TP8 fp8 M = 1, 8, DeepSeek-V3 full fp8 M=1, two rounds; the decode step (batches 1 and 8) alternated
#     three times;
#  2. gpu-check of the branch (its GPU tests first: the staging serves every fp8 swap-AB call).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30s-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s30-main-moe.tar.xz
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
{
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes qwen3-30b-a3b --formats fp8_block --M 1,2,4,8,16,64
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes deepseek-v3-tp8,qwen3-235b-a22b-tp8 --formats fp8_block --M 1,2,8
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
} > $R/ab-stage.log
cut -c1-90 $R/ab-stage.log | grep -E " (1|8) "
binaries_ab $R/decode-ab.log /tmp/n/bin/moe /tmp/m/bin/moe 3
echo "a/b t=$(el)"
pack
quick_gpu_check /tmp/n/bin 5
grep -E "^deepseek-v3 " $R/gc/bench.log | head -2
pack
echo "done t=$(el)"
