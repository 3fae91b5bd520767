#!/usr/bin/env bash
# Session 46's last call, on an H100 (carry .carry/s46a.tar.xz, main at 9bca0ac, gpu-checked on that card
# twice): the tail rule off / on (0 / 8 %) for Qwen3-235B-A22B TP8 bf16 between and beside the measured token
# counts, and Qwen3-30B-A3B fp8 at 256 tokens in four rounds (the rule does not fire there; the second
# call's two rounds had it 0.9 % slower on, a row that moves 235-238 us between runs of one binary).
set -uo pipefail
export END=${END:-200}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s46a.tar.xz}" || exit 1
bench_ab $R/tail-ab3.log MOE_WGMMA_TAKE_AT_TAIL 0,8 $B/moe --shapes qwen3-235b-a22b-tp8 --formats bf16 \
  --M 128,160,256,320,448
pack
for round in 1 2; do
  bench_ab $R/tail-m256-r$round.log MOE_WGMMA_TAKE_AT_TAIL 0,8 $B/moe --shapes qwen3-30b-a3b \
    --formats fp8_block --M 256
done
pack
echo "done t=$(el)"
