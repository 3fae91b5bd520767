#!/usr/bin/env bash
# Session 43's last call, on what device time was left (carry .carry/s43c.tar.xz: 9d3df07, main's defaults):
# the grouped GEMM's forced paths and cuda_fused_moe_test (M sweep, NaN-poisoned workspaces, ten runs' bits)
# with the defaults as they are (stage 2 per tile, taking runs from 8 K steps) and no switch set.
set -uo pipefail
export END=${END:-70}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s43c.tar.xz}" || exit 1
grouped_forced_paths 30 "$(cap 30)"
timeout "$(cap 40 2)" $B/cuda_fused_moe_test --gtest_color=no > $R/fused-tests.log 2>&1
echo "cuda_fused_moe_test rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|^\[==" $R/fused-tests.log | tail -4
pack
