#!/usr/bin/env bash
# Session 45's first call (carry .carry/s45a.tar.xz and .carry/s45a-cycles.tar.xz, built from main): the
# hidden take (MOE_WGMMA_TAKE_HIDDEN=1, session 44, off, never run on a GPU): the take's atomic one ATOMG
# waited for only at the batch's hand-over, the consumers knowing the next run of their batch. The forced
# paths first (its three rows); then, runs taken at every K step (MOE_WGMMA_TAKE_RUNS=1), hidden off / on,
# and with it on, one run a take against batches; then, with it on, taking runs at every K step against the
# default line (fixed shares below 8 steps) on the short-K shapes; Auto's path crossover at 8-64 tokens on
# this card (the H200's M=16 row sat at 1.50x its floor in session 44); the cycles of DeepSeek-V3 TP8 at 64
# tokens, fixed shares and hidden batches.
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s45a.tar.xz}" "${CYCLES:-.carry/s45a-cycles.tar.xz}" || exit 1
grouped_forced_paths 150 0
stop_on_fault MOE_WGMMA_TAKE_RUNS=1 MOE_WGMMA_TAKE_HIDDEN=1 && exit 1
clocks_start $R/clocks.log
short_k="deepseek-v3-tp8,qwen3-next-80b-a3b,qwen3-30b-a3b,qwen3-235b-a22b-tp8"
MOE_WGMMA_TAKE_RUNS=1 bench_ab $R/hidden-ab.log MOE_WGMMA_TAKE_HIDDEN 0,1 $B/moe \
  --shapes "$short_k" --formats fp8_block --M 64,256
MOE_WGMMA_TAKE_RUNS=1 MOE_WGMMA_TAKE_HIDDEN=1 bench_ab $R/steps-ab.log MOE_WGMMA_TAKE_STEPS 1,8 $B/moe \
  --shapes "$short_k" --formats fp8_block --M 64,256
pack
MOE_WGMMA_TAKE_HIDDEN=1 bench_ab $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8,1 $B/moe \
  --shapes qwen3-30b-a3b --formats fp8_block --M 64,128,256
MOE_WGMMA_TAKE_HIDDEN=1 bench_ab $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8,1 $B/moe \
  --shapes qwen3-next-80b-a3b,qwen3-235b-a22b-tp8,deepseek-v3-tp8 --formats fp8_block --M 64,256
echo "take-runs line winner with the hidden take (8 or 1): $(ab_winner $R/take-ab.log MOE_WGMMA_TAKE_RUNS 8 1)"
bench_ab $R/long-k-ab.log MOE_WGMMA_TAKE_HIDDEN 0,1 $B/moe \
  --shapes deepseek-v3 --formats fp8_block --M 16,64,256
bench_ab $R/long-k-ab.log MOE_WGMMA_TAKE_HIDDEN 0,1 $B/moe \
  --shapes qwen3-30b-a3b --formats bf16 --M 64,256
pack
PT_PATHS=mma,swap-ab path_thresholds $B/moe qwen3-30b-a3b,qwen3-235b-a22b-tp8,deepseek-v3-tp8 fp8_block,bf16 \
  8,16,24,32,48,64 90
clocks_stop
pack
export MOE_WGMMA_TAKE_HIDDEN=1
[ -x /tmp/carry/bin/moe-cycles ] && wgmma_cycles /tmp/carry/bin/moe-cycles MOE_WGMMA_TAKE_RUNS "8 1" 64 deepseek-v3-tp8
echo "done t=$(el)"
