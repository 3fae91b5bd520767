#!/usr/bin/env bash
# Session 42's first plan (carry .carry/s42a.tar.xz: main with MOE_WGMMA_TILE_READY, off by default, and its MOE_KERNEL_TIMELINE
# measuring build as bin/moe-measuring). The
# swapped stage 2 per tile (launched as stage 1 starts, each item waiting for its own tile's h): its
# forced-path rows (the swapped rows' bits, bf16 and fp8 with h quantised, TP phase 64, the tile list from
# either writer), every cuda_fused_moe_test with it on (M sweep, poisoned workspaces, ten runs' bits), then
# off against on (one process, two rounds) at 16-256 tokens, on three other shapes, bf16, and the decode
# step at batch 64. On an H200, the quick gpu-check first (the table's column; the switch is off).
# A fault stops the plan after compute-sanitizer's report.
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s42a.tar.xz}" || exit 1
grep -q H200 $R/gpu.txt && [ "${GC_ON_H200:-1}" = 1 ] && quick_gpu_check $B 330 && pack
grouped_forced_paths 90 "$(cap 400)"
echo "tile ready rows: $(grep -E 'tile ready' $R/forced-paths.log | grep -c PASS) PASS"
grep -E "tile ready" $R/forced-paths.log | grep -vE "PASS|equal" | head -5
stop_on_fault MOE_WGMMA_TILE_READY=1 && exit 0
env MOE_WGMMA_TILE_READY=1 timeout "$(cap 150 250)" $B/cuda_fused_moe_test --gtest_color=no \
  > $R/fused-moe-tile-ready.log 2>&1
echo "cuda_fused_moe_test with tile ready rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|tests? ran" $R/fused-moe-tile-ready.log | head -8
pack
clocks_start $R/clocks.log
bench_ab $R/tile-ready-ab.log MOE_WGMMA_TILE_READY 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
  --M 16,32,64,128,256
echo "winner: $(ab_winner $R/tile-ready-ab.log MOE_WGMMA_TILE_READY 0 1)"
pack
bench_ab $R/tile-ready-shapes-ab.log MOE_WGMMA_TILE_READY 0,1 $B/moe \
  --shapes qwen3-next-80b-a3b,qwen3-235b-a22b-tp8,deepseek-v3-tp8 --formats fp8_block --M 16,64,256
echo "winner (shapes): $(ab_winner $R/tile-ready-shapes-ab.log MOE_WGMMA_TILE_READY 0 1)"
pack
# The decode step's kernel timeline at batch 64 (bin/moe-measuring), off and on: where stage 2's blocks
# start and wait.
for v in 0 1; do
  [ "$(cap 50 60)" -lt 40 ] && break
  MOE_WGMMA_TILE_READY=$v MOE_KERNEL_TIMELINE=1 timeout "$(cap 50 60)" $B/moe-measuring bench \
    --random-shape qwen3-30b-a3b --format fp8_block --batches 64 --prefill 0 > "$R/timeline-b64-tr$v.log" 2>&1
  echo "timeline batch 64 MOE_WGMMA_TILE_READY=$v rc $? t=$(el)"
  grep -E "^decode|decode layers" "$R/timeline-b64-tr$v.log"
  grep -A22 -E "^  launch" "$R/timeline-b64-tr$v.log" | head -24
  pack
done
# The decode step at batch 64 (the swapped stages' batch), off and on alternated.
for v in 0 1 0 1; do
  [ "$(cap 40 5)" -lt 30 ] && break
  MOE_WGMMA_TILE_READY=$v timeout 40 $B/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 64 \
    --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/MOE_WGMMA_TILE_READY=$v /"
done | tee $R/tile-ready-decode.log
clocks_stop
pack
echo "done t=$(el)"
