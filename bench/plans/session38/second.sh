#!/usr/bin/env bash
# Session 38's second plan. The first call (short.sh on an H200) measured the one-box gate/up copy: the
# swapped kernel's fp8 M=64 219.7 -> 175.9 us, M=256 262.3 -> 204.1, the 128-pair kernel's M=1024 269.5 ->
# 276.1, M=4096 637.1 -> 649.9. The branch now keeps it in the swapped kernel only (MOE_WGMMA_GATE_UP_BOX on,
# MOE_WGMMA_PAIRS_GATE_UP_BOX off). Here: its quick gpu-check (every GPU test, the case checks, the benchmark:
# the H200 column) and the two switches against each other at the sizes each kernel runs.
# Carry: .carry/s38-gc.tar.xz (scripts/pack-gpu-carry of the branch at 5a4269c).
set -uo pipefail
export END=${END:-430}
source bench/plans/lib/gpu-env.sh
start_plan .carry/s38-gc.tar.xz || exit 1
quick_gpu_check $B "${GC_RESERVE:-70}"
grep -E "gate/up in one box.*M=400 " $R/gc/gpu-tests.log | head -4
pack
env_ab_rows $R/box-ab.log MOE_WGMMA_PAIRS_GATE_UP_BOX "0 1" $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block --M 256,1024,4096
pivot_rows $R/box-ab.log
pack
echo "done t=$(el)"
