#!/usr/bin/env bash
# Session 24, first call: branch next/warm-norm (NEXT.md item 1): the norm's code run once before the
# programmatic wait in the tensor-core q/k/v GEMV and the router kernel (MOE_NORM_WARMUP=1, off by default),
# to test whether the norm phases' ~2 us more than one round trip is instruction fetch; and the norms loading
# every row before the rows' sums (always on in the branch). Its bits tests, the decode step with the warm-up
# on and off (alternated), against main's binary, batch 8 with MOE_GEMV_MMA_TOKENS 8 and 4 (the tensor-core
# GEMV at 8 tokens, whose norm was the suspect), the timeline both ways, then gpu-check (warm-up off: the
# branch's code as it would land; NormWarmupKeepsTheBits covers on). Carry: .carry/s24-gpu.tar.xz
# (scripts/pack-gpu-carry build, at the branch, 91d1670), .carry/s24-main-moe.tar.xz (bin/moe at main) and
# .carry/measuring24.tar.xz (scripts/build-measuring MOE_KERNEL_TIMELINE at the branch, bin/moe).
set -uo pipefail
export END=585
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s24-gpu.tar.xz /tmp/n
mkdir -p /tmp/o /tmp/m && tar -C /tmp/o -xJf .carry/s24-main-moe.tar.xz && tar -C /tmp/m -xJf .carry/measuring24.tar.xz
record_gpu $R/gpu.txt
timeout 240 /tmp/n/bin/cuda_model_test --gtest_filter='cuda_model_router*:cuda_model_gemv*' > $R/tests.log 2>&1
echo "router and gemv tests rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure" $R/tests.log | head -8
decode_ab /tmp/n/bin/moe $R/warm-ab.log MOE_NORM_WARMUP 1 0 1 0 1 0
pack
binaries_ab $R/main-ab.log /tmp/n/bin/moe /tmp/o/bin/moe 2
pack
decode_ab /tmp/n/bin/moe $R/tokens-ab.log MOE_GEMV_MMA_TOKENS 8 4 8 4
pack
timeline /tmp/m/bin/moe $R/timeline-warm.log MOE_NORM_WARMUP=1
timeline /tmp/m/bin/moe $R/timeline-off.log MOE_NORM_WARMUP=0
pack
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
