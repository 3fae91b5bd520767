#!/usr/bin/env bash
# Session 49's second call (carry .carry/s49a.tar.xz, main's build). The quick gpu-check of main (on an H200
# the table's H200 column, none since session 44; on an H100 the H100 column's refresh), with the winners of
# the first call's A/Bs exported when it found any (FIRST=1 TRIGGER=1 PROLOGUE=32: bash second.sh), then the
# one-block grouping at 256 tokens (MOE_GROUPING_MIN_CHUNK 1024 / 2048, four rounds: session 40 had 4096 at
# -0.6 %, too small to read in two).
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s49a.tar.xz}" || exit 1
pack_every 15
export MOE_WGMMA_FIRST_WEIGHTS=${FIRST:-0} MOE_WGMMA_STAGE2_TRIGGER=${TRIGGER:-0}
export MOE_SMALL_PROLOGUE_TOKENS=${PROLOGUE:-8}
echo "first weights $MOE_WGMMA_FIRST_WEIGHTS, stage 2 trigger $MOE_WGMMA_STAGE2_TRIGGER, small prologue" \
  "$MOE_SMALL_PROLOGUE_TOKENS"
quick_gpu_check $B 90
unset MOE_WGMMA_FIRST_WEIGHTS MOE_WGMMA_STAGE2_TRIGGER MOE_SMALL_PROLOGUE_TOKENS
pack
ROUNDS=4 bench_ab $R/grouping-chunk-ab.log MOE_GROUPING_MIN_CHUNK 1024,2048 $B/moe --shapes qwen3-30b-a3b \
  --formats fp8_block,bf16 --M 256 > /dev/null
ab_means $R/grouping-chunk-ab.log
stop_packing
pack
echo "done t=$(el)"
