#!/usr/bin/env bash
# Session 21, third call: the compact fp8 GEMV's 16-warp blocks (MOE_GEMV_WIDE) on and off, alternated in one
# lease, the new bits test first and the timeline with them; then gpu-check at this commit and, in the time
# left, the TP CLI (second.sh's step). Carry: .carry/s21-wide.tar.xz (scripts/pack-gpu-carry build) and
# .carry/measuring-wide.tar.xz (bin/moe of scripts/build-measuring MOE_KERNEL_TIMELINE).
set -uo pipefail
export END=585  # the call's 600 s, less the packing (gpu-env.sh's cap)
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s21-wide.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring-wide.tar.xz
record_gpu $R/gpu.txt
timeout 120 /tmp/n/bin/cuda_model_test --gtest_filter='cuda_model_gemv*:cuda_model_router*' > $R/gemv-test.log 2>&1
rc=$?
echo "gemv tests rc $rc t=$(el)"
grep -E "^\[  (FAILED|PASSED|  OK)|Failure" $R/gemv-test.log | head -8
[ $rc -ne 0 ] && export MOE_GEMV_WIDE=0 && echo "MOE_GEMV_WIDE=0 from here"
decode_ab /tmp/n/bin/moe $R/ab-wide.log MOE_GEMV_WIDE 1 0 1 0 1 0
pack
timeline /tmp/m/bin/moe $R/timeline-b1.log
pack
quick_gpu_check /tmp/n/bin
pack
timeout "$(cap 400 10)" python3 scripts/tp-gpu-check /tmp/n/bin/moe $R/tp > $R/tp.log 2>&1
echo "tp-gpu-check rc $? t=$(el)"
tail -12 $R/tp.log
pack
echo "done t=$(el)"
