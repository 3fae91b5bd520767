#!/usr/bin/env bash
# Session 20's third and fourth calls: a change against the previous binary (33f01a7, .carry/old20b-moe.tar.xz).
#   against-old.sh CARRY MEASURING GTEST_FILTER PAIRS
# CARRY: scripts/pack-gpu-carry's archive of the change; MEASURING: its measuring build (bin/moe of
# scripts/build-measuring MOE_KERNEL_TIMELINE). The GPU tests that FILTER names, the model's decode step from
# both binaries (PAIRS alternations), the measuring build's timeline, then gpu-check of the change.
set -uo pipefail
source bench/plans/lib/gpu-env.sh
unpack_carry "$1" /tmp/n
mkdir -p /tmp/m /tmp/o && tar -C /tmp/m -xJf "$2" && tar -C /tmp/o -xJf .carry/old20b-moe.tar.xz
record_gpu $R/gpu.txt
timeout 150 /tmp/n/bin/cuda_model_test --gtest_color=no --gtest_filter="$3" > $R/tests.log 2>&1
echo "tests rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|FAILED|^\[       OK \].*Compact" $R/tests.log | head -12
binaries_ab $R/ab.log /tmp/n/bin/moe /tmp/o/bin/moe "$4"
pack
timeline /tmp/m/bin/moe $R/timeline.log
pack
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
