#!/usr/bin/env bash
# Session 21: branch next/router-prologue (the router GEMV and the MoE prologue as one cluster launch; the
# combine's top-k reads before its wait) against main on the same card: the decode step from both binaries
# alternated, the fused launch on and off in the branch's binary, its timeline, then gpu-check on the branch.
# Carry: .carry/s21-branch.tar.xz (scripts/pack-gpu-carry build, the branch), .carry/s21-main-moe.tar.xz
# (main's bin/moe) and .carry/measuring-branch.tar.xz (bin/moe of scripts/build-measuring MOE_KERNEL_TIMELINE, the branch).
set -uo pipefail
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s21-branch.tar.xz /tmp/b
mkdir -p /tmp/n /tmp/m && tar -C /tmp/n -xJf .carry/s21-main-moe.tar.xz && tar -C /tmp/m -xJf .carry/measuring-branch.tar.xz
record_gpu $R/gpu.txt
timeout 120 /tmp/b/bin/cuda_model_test --gtest_filter='cuda_model_router*' > $R/router-test.log 2>&1
rc=$?
echo "router test rc $rc t=$(el)"
grep -E "^\[  (FAILED|PASSED|  OK)|Failure" $R/router-test.log | head -8
# A fused launch that fails its test is turned off for the rest (the combine change still measured).
[ $rc -ne 0 ] && export MOE_ROUTER_PROLOGUE=0 && echo "MOE_ROUTER_PROLOGUE=0 from here"
binaries_ab $R/ab.log /tmp/b/bin/moe /tmp/n/bin/moe 3
decode_ab /tmp/b/bin/moe $R/ab-switch.log MOE_ROUTER_PROLOGUE 1 0 1 0
pack
timeline /tmp/m/bin/moe $R/timeline-b1.log
pack
quick_gpu_check /tmp/b/bin
pack
echo "done t=$(el)"
