#!/usr/bin/env bash
# Session 44's first call (carry .carry/s44a.tar.xz, built from main): the quick gpu-check of main's defaults
# (stage 2 per tile, taking its runs from 8 K steps: session 43 ran each path in a gpu-check, not the
# defaults together), then off / on on every shape on this card (session 43 measured on H100s only; on an
# H200 this is the first, and its gpu-check is the table's H200 column); then, where the cycles build came
# (.carry/s44a-cycles.tar.xz: bin/moe-cycles), where stage 2's steps go on DeepSeek-V3 TP8 at 64 tokens
# with runs taken at every K step (1) and at the default's 8 (there: fixed shares), after the A/Bs of the
# work items in the slots (MOE_WGMMA_SLOT_ITEMS): NEXT.md item 1.
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s44a.tar.xz}" || exit 1
tar -C /tmp/carry -xJf "${CYCLES:-.carry/s44a-cycles.tar.xz}" 2>/dev/null || echo "no cycles build"
quick_gpu_check $B 5
pack
clocks_start $R/clocks.log
every_shape_ab $R/tr-ab.log MOE_WGMMA_TILE_READY 0,1
MOE_WGMMA_TILE_READY=1 bench_ab $R/take-ab.log MOE_WGMMA_TAKE_RUNS 0,1 $B/moe \
  --shapes qwen3-30b-a3b,deepseek-v3 --formats fp8_block,bf16 --M 64,256
clocks_stop
echo "tile ready winner: $(loses_nowhere $R/tr-ab.log MOE_WGMMA_TILE_READY)"
pack
# Taking runs at every K step with the work items in the slots (MOE_WGMMA_SLOT_ITEMS, off; NEXT.md item 1): on
# the short-K shapes where taking runs lost, and against the default's fixed shares there.
MOE_WGMMA_TAKE_RUNS=1 bench_ab $R/slot-ab.log MOE_WGMMA_SLOT_ITEMS 0,1 $B/moe \
  --shapes deepseek-v3-tp8,qwen3-next-80b-a3b,qwen3-30b-a3b --formats fp8_block --M 64,256
MOE_WGMMA_SLOT_ITEMS=1 bench_ab $R/slot-ab.log MOE_WGMMA_TAKE_RUNS 8,1 $B/moe \
  --shapes deepseek-v3-tp8,qwen3-next-80b-a3b,qwen3-30b-a3b --formats fp8_block --M 64,256
pack
[ -x /tmp/carry/bin/moe-cycles ] && wgmma_cycles /tmp/carry/bin/moe-cycles MOE_WGMMA_TAKE_RUNS "1 8" 64 deepseek-v3-tp8
echo "done t=$(el)"
