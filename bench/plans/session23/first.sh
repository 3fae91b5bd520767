#!/usr/bin/env bash
# Session 23, first call: branch next/gemv-mma's tensor-core fp8 decode GEMV (NEXT.md item 1): its direct test
# and the other GEMV tests, the decode step with MOE_GEMV_MMA on and off (alternated), the timeline with it
# on, then gpu-check with it on (the model fixtures' KL against transformers through it). Carry:
# .carry/s23-gpu.tar.xz (scripts/pack-gpu-carry build, at the branch) and .carry/measuring23.tar.xz (bin/moe
# of scripts/build-measuring MOE_KERNEL_TIMELINE at the branch, packed with tar -cJ).
set -uo pipefail
export END=585 # the call's 600 s, less the packing (gpu-env.sh's cap)
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s23-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring23.tar.xz
record_gpu $R/gpu.txt
timeout 180 /tmp/n/bin/cuda_model_test --gtest_filter='cuda_model_gemv*' > $R/gemv-test.log 2>&1
echo "gemv tests rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|Failure|gemv mma\] (2048x4096|5120x2048) M=1" $R/gemv-test.log | head -12
decode_ab /tmp/n/bin/moe $R/mma-ab.log MOE_GEMV_MMA 1 0 1 0 1 0
pack
timeline /tmp/m/bin/moe $R/timeline-mma.log MOE_GEMV_MMA=1
pack
export MOE_GEMV_MMA=1
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
