#!/usr/bin/env bash
# Session 44's second call (carry .carry/s44b.tar.xz and .carry/s44b-cycles.tar.xz, built from
# next/s44-take-batches): stage 2 taking its runs in batches that cover MOE_WGMMA_TAKE_STEPS K steps (default
# 8), so thread 0's atomic comes back behind the batch's copies. The forced paths first (batches, a partial
# last batch, one run a take, the TP rank's 3 K steps); then, with runs taken at every K step, batches against
# one run a take on the short-K shapes; then taking runs (batched) at every K step against the default line
# (fixed shares below 8 steps) on every shape; then the cycles of DeepSeek-V3 TP8 at 64 tokens. On an H200,
# the quick gpu-check of the branch first (the table's H200 column).
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s44b.tar.xz}" || exit 1
tar -C /tmp/carry -xJf "${CYCLES:-.carry/s44b-cycles.tar.xz}" 2>/dev/null || echo "no cycles build"
if grep -qi h200 $R/gpu.txt; then
  quick_gpu_check $B 200
  pack
fi
grouped_forced_paths 150 0
stop_on_fault MOE_WGMMA_TAKE_RUNS=1 && exit 1
clocks_start $R/clocks.log
MOE_WGMMA_TAKE_RUNS=1 bench_ab $R/steps-ab.log MOE_WGMMA_TAKE_STEPS 1,8 $B/moe \
  --shapes deepseek-v3-tp8,qwen3-next-80b-a3b,qwen3-30b-a3b,qwen3-235b-a22b-tp8 --formats fp8_block --M 64,256
pack
every_shape_ab $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8,1
clocks_stop
echo "take-runs line winner (8 or 1): $(ab_winner $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8 1)"
pack
export MOE_WGMMA_TAKE_RUNS=1
[ -x /tmp/carry/bin/moe-cycles ] && wgmma_cycles /tmp/carry/bin/moe-cycles MOE_WGMMA_TAKE_STEPS "1 8" 64 deepseek-v3-tp8
echo "done t=$(el)"
