#!/usr/bin/env bash
# Session 30, seventh call. Carries: .carry/s30f-moe.tar.xz (bin/moe and lib/ of branch next/s30-l2pf, NOT
# RUN ON A GPU: the expert weights' 16-byte loads in the swap-AB stages and the GEMV (load_weights16) with
# L2's 256-byte prefetch size, `LDG.E.NA.LTC256B.128`: a miss brings the row's next K step too, which the
# block's next K warp reads at about the same time) and .carry/s30s-moe.tar.xz (bin/moe at 8cca4bc, main's
# kernels). The measured read bandwidth keeps load_stream16 (the floor's loads unchanged).
#  1. main against the branch, two rounds: Qwen3-30B-A3B fp8 / bf16 M = 1..64, DeepSeek-V3 TP8 and
#     Qwen3-235B-A22B TP8 fp8 M = 1, 8, DeepSeek-V3 full fp8 M=1; the decode step alternated three times.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30f-moe.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s30s-moe.tar.xz
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
{
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,8,16,64
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes deepseek-v3-tp8,qwen3-235b-a22b-tp8 --formats fp8_block --M 1,8
  ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
} > $R/ab-l2pf.log
awk '{print $1, $2, $3, $4, $5, $6}' $R/ab-l2pf.log | awk '$5 == 1 || $5 == 8 || $5 == 64' | sort -k3,3 -k4,4 -k5,5n -k2,2
binaries_ab $R/decode-ab.log /tmp/n/bin/moe /tmp/m/bin/moe 3
pack
echo "done t=$(el)"
