#!/usr/bin/env bash
# Session 23, third call: the tensor-core GEMV up to 8 tokens (batch 8 decode's q/k/v with its norm and o
# without one, instead of a norm kernel, an activation kernel and cuBLAS on the bf16 copy) and warp_route
# without local memory (the second call's ncu SASS: prob and key through STL / LDL in every pick). Its direct
# GEMV test (M = 1 to 8 against the compact kernel by chunks), the decode step against the second call's
# binary (1bb678b) alternated, MOE_GEMV_MMA on and off (batch 8's A/B: off is the old path), the timeline,
# then gpu-check. Carry: .carry/s23-gpu3.tar.xz (scripts/pack-gpu-carry build), .carry/s23-old-moe.tar.xz
# (bin/moe of .carry/s23-gpu2.tar.xz) and .carry/measuring23c.tar.xz (scripts/build-measuring
# MOE_KERNEL_TIMELINE's bin/moe).
set -uo pipefail
export END=585
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s23-gpu3.tar.xz /tmp/n
mkdir -p /tmp/o /tmp/m && tar -C /tmp/o -xJf .carry/s23-old-moe.tar.xz && tar -C /tmp/m -xJf .carry/measuring23c.tar.xz
record_gpu $R/gpu.txt
timeout 180 /tmp/n/bin/cuda_model_test --gtest_filter='cuda_model_gemv*' > $R/gemv-test.log 2>&1
echo "gemv tests rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure|gemv mma\] (2048x4096|5120x2048) M=(1|8)" $R/gemv-test.log | head -12
binaries_ab $R/ab.log /tmp/n/bin/moe /tmp/o/bin/moe 3
pack
decode_ab /tmp/n/bin/moe $R/mma-ab.log MOE_GEMV_MMA 1 0 1 0
pack
timeline /tmp/m/bin/moe $R/timeline.log
pack
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
