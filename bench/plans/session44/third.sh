#!/usr/bin/env bash
# Session 44's third call (carry .carry/s44c.tar.xz and .carry/s44c-cycles.tar.xz, built from
# next/s44-take-batches 6cb80c7): the take's atomic now one ATOMG waited for only at the batch's hand-over
# (ptxas had warp-aggregated it and shuffled its result at once), and the consumers know the next run of
# their batch without the slot. The forced paths; then with runs taken at every K step, batches against one
# run a take and 8 steps a take against 16; then taking runs at every K step against the default line (fixed
# shares below 8 steps) on the short-K shapes; then the cycles of DeepSeek-V3 TP8 at 64 tokens, fixed shares and
# batches. Between them, Auto's path crossover at 8-64 tokens on this card.
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s44c.tar.xz}" || exit 1
tar -C /tmp/carry -xJf "${CYCLES:-.carry/s44c-cycles.tar.xz}" 2>/dev/null || echo "no cycles build"
grouped_forced_paths 150 0
stop_on_fault MOE_WGMMA_TAKE_RUNS=1 && exit 1
clocks_start $R/clocks.log
MOE_WGMMA_TAKE_RUNS=1 bench_ab $R/steps-ab.log MOE_WGMMA_TAKE_STEPS 1,8 $B/moe \
  --shapes deepseek-v3-tp8,qwen3-next-80b-a3b,qwen3-30b-a3b,qwen3-235b-a22b-tp8 --formats fp8_block --M 64,256
pack
bench_ab $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block --M 64,128,256
bench_ab $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8,1 $B/moe \
  --shapes qwen3-next-80b-a3b,qwen3-235b-a22b-tp8,deepseek-v3-tp8 --formats fp8_block --M 64,256
echo "take-runs line winner (8 or 1): $(ab_winner $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8 1)"
pack
# Auto's crossover between the swap-AB stages and the grouped GEMM (H100-measured, sessions 28 and 32) after
# sessions 39-43's grouped-GEMM changes, on this card: the H200's M=16 row sits at 1.50x its floor.
PT_PATHS=mma,swap-ab path_thresholds $B/moe qwen3-30b-a3b,qwen3-235b-a22b-tp8,deepseek-v3-tp8 fp8_block,bf16 \
  8,16,24,32,48,64 150
MOE_WGMMA_TAKE_RUNS=1 bench_ab $R/steps16-ab.log MOE_WGMMA_TAKE_STEPS 8,16 $B/moe \
  --shapes deepseek-v3-tp8,qwen3-next-80b-a3b,qwen3-30b-a3b,deepseek-v3 --formats fp8_block --M 64,256
clocks_stop
pack
[ -x /tmp/carry/bin/moe-cycles ] && wgmma_cycles /tmp/carry/bin/moe-cycles MOE_WGMMA_TAKE_RUNS "8 1" 64 deepseek-v3-tp8
echo "done t=$(el)"
