#!/usr/bin/env bash
# Session 22, second call (branch next/s22): the first call measured the branch (one-warp grouping, x quantised
# from the router kernel's shared rows, norm threads past 256 loading no weights) ~0.02 ms slower than main at
# batch 1 on an H100. The one-warp grouping is now a switch (MOE_WARP_GROUPING, on): its tests both ways, the
# decode step with it on and off, the branch against main's binary, the timeline both ways; then gpu-check at
# the branch and the TP check's q30 model with its new rule (the fp32 CPU reference decides a divergence).
# Carry: .carry/s22-gpu2.tar.xz (scripts/pack-gpu-carry build at the branch), .carry/measuring22b.tar.xz
# (bin/moe of scripts/build-measuring MOE_KERNEL_TIMELINE at the branch) and .carry/s22-main-moe.tar.xz
# (bin/moe of the first call's main build).
set -uo pipefail
export END=585 # the call's 600 s, less the packing (gpu-env.sh's cap)
source bench/plans/lib/gpu-env.sh
export MOE_ROUTER_PROLOGUE=1 # the branch's default; main's binary has it off by default
unpack_carry .carry/s22-gpu2.tar.xz /tmp/n
mkdir -p /tmp/m /tmp/o && tar -C /tmp/m -xJf .carry/measuring22b.tar.xz && tar -C /tmp/o -xJf .carry/s22-main-moe.tar.xz
record_gpu $R/gpu.txt
timeout 120 /tmp/n/bin/cuda_fused_moe_test --gtest_filter='*Grouping*' > $R/grouping-test.log 2>&1
echo "grouping tests rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)|warp grouping|M=4 EP 1" $R/grouping-test.log | head -8
timeout 120 /tmp/n/bin/cuda_model_test --gtest_filter='cuda_model_router*:cuda_model_gemv*' > $R/router-test.log 2>&1
echo "router + gemv tests rc $? t=$(el)"
grep -E "^\[  (FAILED|PASSED)" $R/router-test.log | head -4
decode_ab /tmp/n/bin/moe $R/warp-grouping-ab.log MOE_WARP_GROUPING 1 0 1 0 1 0
binaries_ab $R/branch-ab.log /tmp/n/bin/moe /tmp/o/bin/moe 2
pack
for v in 1 0; do
  timeline /tmp/m/bin/moe $R/timeline-warp$v.log MOE_WARP_GROUPING=$v
done
pack
quick_gpu_check /tmp/n/bin
pack
export TP_CHECK_MODELS=q30 TP_CHECK_NO_BENCH=1
tp_cli /tmp/n/bin/moe 200
pack
echo "done t=$(el)"
