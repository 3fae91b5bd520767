#!/usr/bin/env bash
# Session 46, on an H100 (carry .carry/s46a.tar.xz, main at 9bca0ac, already gpu-checked on that card): the
# tail rule off / on (0 / 8 %) at the token counts between those the second call measured, where the tile
# counts put stage 1's remainder elsewhere, so a wrong firing would show.
set -uo pipefail
export END=${END:-200}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s46a.tar.xz}" || exit 1
bench_ab $R/tail-ab2.log MOE_WGMMA_TAKE_AT_TAIL 0,8 $B/moe --shapes qwen3-235b-a22b-tp8,qwen3-30b-a3b \
  --formats fp8_block --M 160,176,208,224,240,288,352,416,480
pack
bench_ab $R/tail-ab2.log MOE_WGMMA_TAKE_AT_TAIL 0,8 $B/moe --shapes qwen3-235b-a22b-tp8 --formats bf16 \
  --M 128,160,256,320,448
pack
echo "done t=$(el)"
