#!/usr/bin/env bash
# Session 30, tenth call. Carries: .carry/s30w-moe.tar.xz (bin/moe and lib/ of branch next/s30-swap256, NOT
# RUN ON A GPU: the grouped GEMMs' cp.async weight copies (the swapped wgmma kernel's bf16 weight rows,
# expert_mma_tile's B rows) with L2's 256-byte prefetch size, as the swap-AB stages' loads at 1bfdf09; fp8
# weights come by TMA, whose maps already promote 256 bytes) and .carry/s30f-moe.tar.xz (bin/moe at 1bfdf09,
# main's kernels). Main against the branch, two rounds, bf16 and fp8 (fp8: the control) M = 64, 128, 256.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30w-moe.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s30f-moe.tar.xz bin/moe
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
ab_op_rows /tmp/m/bin/moe /tmp/n/bin/moe --shapes qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8 \
  --formats bf16,fp8_block --M 64,128,256 > $R/ab-swap256.log
awk '{print $1, $2, $3, $4, $5, $6}' $R/ab-swap256.log | sort -k3,3 -k4,4 -k5,5n -k2,2
pack
echo "done t=$(el)"
