#!/usr/bin/env bash
# Session 42's second plan (carry .carry/s42b.tar.xz: branch next/s42-tile-ready with MOE_WGMMA_TILE_READY=N,
# the swapped stage 2 per tile where stage 2 takes at least N K steps, off by default; its MOE_KERNEL_TIMELINE
# build as bin/moe-measuring; .carry/s42b-cycles.tar.xz: its MOE_WGMMA_CYCLES build as bin/moe-cycles). The
# first call had it 2.7-3.2 % faster at 64-128 tokens of Qwen3-30B-A3B (fp8 and bf16) but 4-5 % slower on
# the TP8 shards at 64 (two K steps in stage 2): stage 2's copier now stops asking once it sees all of stage
# 1 done (a done count). Forced paths, every cuda_fused_moe_test with it on, then 0 / 1 / 5 (one process,
# two rounds) on every shape, the batch-64 timeline on, the decode step, the cycles on DeepSeek-V3 TP8.
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s42b.tar.xz}" || exit 1
tar -C /tmp/carry -xJf "${CYCLES:-.carry/s42b-cycles.tar.xz}" || echo "no cycles build"
grouped_forced_paths 90 "$(cap 400)"
echo "tile ready rows: $(grep -E 'tile ready' $R/forced-paths.log | grep -cE 'PASS|equal') PASS"
grep -E "tile ready" $R/forced-paths.log | grep -vE "PASS|equal" | head -5
stop_on_fault MOE_WGMMA_TILE_READY=1 && exit 0
env MOE_WGMMA_TILE_READY=1 timeout "$(cap 150 250)" $B/cuda_fused_moe_test --gtest_color=no \
  > $R/fused-moe-tile-ready.log 2>&1
echo "cuda_fused_moe_test with tile ready rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|tests? ran" $R/fused-moe-tile-ready.log | head -8
pack
clocks_start $R/clocks.log
bench_ab $R/tile-ready-ab.log MOE_WGMMA_TILE_READY 0,1,5 $B/moe --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
  --M 8,16,32,64,128,256
pack
bench_ab $R/tile-ready-shapes-ab.log MOE_WGMMA_TILE_READY 0,1,5 $B/moe \
  --shapes qwen3-next-80b-a3b,qwen3-235b-a22b-tp8,deepseek-v3-tp8,deepseek-v3 --formats fp8_block --M 16,64,256
pack
if [ "$(cap 50 60)" -ge 40 ]; then
  MOE_WGMMA_TILE_READY=1 MOE_KERNEL_TIMELINE=1 timeout "$(cap 50 60)" $B/moe-measuring bench \
    --random-shape qwen3-30b-a3b --format fp8_block --batches 64 --prefill 0 > "$R/timeline-b64-tr1.log" 2>&1
  echo "timeline batch 64 MOE_WGMMA_TILE_READY=1 rc $? t=$(el)"
  grep -A22 -E "^  launch" "$R/timeline-b64-tr1.log" | head -24
  pack
fi
for v in 0 1 0 1; do
  [ "$(cap 40 40)" -lt 30 ] && break
  MOE_WGMMA_TILE_READY=$v timeout 40 $B/moe bench --random-shape qwen3-30b-a3b --format fp8_block --batches 64 \
    --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/MOE_WGMMA_TILE_READY=$v /"
done | tee $R/tile-ready-decode.log
clocks_stop
pack
# The cycles a step (copier and consumers) on DeepSeek-V3 TP8 at 64 tokens, off and on.
wgmma_cycles /tmp/carry/bin/moe-cycles MOE_WGMMA_TILE_READY "0 1" 64 deepseek-v3-tp8
echo "done t=$(el)"
