#!/usr/bin/env bash
# Session 23, fourth call (the last device minutes): the tensor-core GEMV's quantisation loading 4 items a
# warp before quantising them (one round trip: the o projection at one token has 2 items a warp), the model
# handing it more than 4 tokens only with MOE_GEMV_MMA_TOKENS (the third call measured batch 8 slower with it),
# and MmaGemvNearCompact's counts corrected (4096 columns with a norm past 4 tokens do not fit). The direct
# GEMV tests, the decode step against the third call's binary (3140bd0) alternated, MOE_GEMV_MMA_TOKENS 8
# against 4 (batch 8), then gpu-check. Carry: .carry/s23-gpu4.tar.xz (scripts/pack-gpu-carry build) and
# .carry/s23-old3-moe.tar.xz (bin/moe of .carry/s23-gpu3.tar.xz).
set -uo pipefail
export END=585
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s23-gpu4.tar.xz /tmp/n
mkdir -p /tmp/o && tar -C /tmp/o -xJf .carry/s23-old3-moe.tar.xz
record_gpu $R/gpu.txt
timeout 180 /tmp/n/bin/cuda_model_test --gtest_filter='cuda_model_gemv*' > $R/gemv-test.log 2>&1
echo "gemv tests rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure" $R/gemv-test.log | head -8
binaries_ab $R/ab.log /tmp/n/bin/moe /tmp/o/bin/moe 3
pack
decode_ab /tmp/n/bin/moe $R/tokens-ab.log MOE_GEMV_MMA_TOKENS 8 4 8 4
pack
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
