#!/usr/bin/env bash
# Session 38's plan for little device time (first.sh's gpu-check does not fit): branch next/s37-gate-up-box's
# grouped-GEMM GPU test (every forced-path row, the one-box rows' bits against the per-box rows'), the switch
# off against on (off is main's kernel), the swapped kernel's cycles with the switch off and on, and Auto's
# fp8 paths forced against each other. Carry: .carry/s38-box.tar.xz.
set -uo pipefail
export END=${END:-300}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s38-box.tar.xz || exit 1
timeout "$(cap 100 70)" $B/cuda_forced_paths_test --gtest_color=no --gtest_filter='*GroupedGemmOnWgmmaAndMmaSync*' \
  > $R/forced-paths.log 2>&1
echo "forced paths rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|Failure|gate/up in one box\].*M=400 " $R/forced-paths.log | head -12
pack
env_ab_rows $R/box-ab.log MOE_WGMMA_GATE_UP_BOX "0 1" $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,128,256,1024,4096
pivot_rows $R/box-ab.log
pack
wgmma_cycles $B/moe-measuring MOE_WGMMA_GATE_UP_BOX "0 1" 64,256
path_thresholds $B/moe qwen3-30b-a3b fp8_block 8,16,32,48,64 10
echo "done t=$(el)"
