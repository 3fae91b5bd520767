#!/usr/bin/env bash
# Session 43's second call (carry .carry/s43b.tar.xz: branch next/s43-take-runs). The first call (main
# 4a22782) had stage 2 per tile faster from 64 tokens on every shape but DeepSeek-V3 full M=256 (2617 ->
# 2691 us): there stage 1's last runs hold a few SMs while stage 2's other blocks run, and with a fixed share
# each, stage 2's blocks that start on those SMs end the kernel that much later. The branch has stage 2 take
# its runs from a counter (MOE_WGMMA_TAKE_RUNS, on with MOE_WGMMA_TILE_READY). Forced paths first (the new
# rows: taking runs, fixed shares, early weights with tile ready; stop if they fail or hang); then off / on
# on every shape (on = taking runs), fixed shares against taking runs where it lost; whether on loses
# nowhere (tile ready winner); the quick gpu-check with it on if time is left.
set -uo pipefail
export END=${END:-420}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s43b.tar.xz}" || exit 1
grouped_forced_paths 90 "$(cap 120)"
echo "tile ready rows: $(grep -E 'tile ready' $R/forced-paths.log | grep -cE 'PASS|equal') PASS"
if ! grep -q "^\[  PASSED  \] 2 tests" $R/forced-paths.log; then
  stop_on_fault MOE_WGMMA_TILE_READY=1
  echo "forced paths did not pass: stopping"
  exit 0
fi
clocks_start $R/clocks.log
every_shape_ab $R/tr-ab.log MOE_WGMMA_TILE_READY 0,1
MOE_WGMMA_TILE_READY=1 bench_ab $R/take-ab.log MOE_WGMMA_TAKE_RUNS 0,1 $B/moe \
  --shapes deepseek-v3,qwen3-30b-a3b --formats fp8_block --M 64,256
clocks_stop
pack
# On where it loses nowhere: every shape, format and M with on's mean at most 0.5 % above off's, one 1 % below.
winner=$(loses_nowhere $R/tr-ab.log MOE_WGMMA_TILE_READY)
echo "tile ready winner: $winner"
export MOE_WGMMA_TILE_READY=1
echo "quick gpu-check with MOE_WGMMA_TILE_READY=$MOE_WGMMA_TILE_READY"
if [ "$(cap 330 5)" -ge 200 ]; then quick_gpu_check $B 5; else echo "no time left for the gpu-check"; fi
pack
echo "done t=$(el)"
