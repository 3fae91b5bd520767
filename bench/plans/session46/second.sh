#!/usr/bin/env bash
# Session 46's last call (carry .carry/s46a.tar.xz, main's build at 9bca0ac: stage 2 taking its runs where
# stage 1's fixed shares leave a tail, the hidden take out). On an H200 if one comes: the quick gpu-check (the
# table's column for that card; its last was session 44's, before Auto's threshold by intermediate size),
# then the tail rule off / on (0 / 8 %) where the H100 measured it 1.6-14 % faster (Qwen3-235B-A22B TP8 and
# Qwen3-30B-A3B fp8 at 192 and 384 tokens) and at the token counts between, whose tile counts put stage 1's
# remainder elsewhere.
set -uo pipefail
export END=${END:-420}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s46a.tar.xz}" || exit 1
pack_every 15
quick_gpu_check $B 100
bench_ab $R/tail-ab.log MOE_WGMMA_TAKE_AT_TAIL 0,8 $B/moe --shapes qwen3-235b-a22b-tp8,qwen3-30b-a3b \
  --formats fp8_block --M 160,192,224,288,352,384,416
stop_packing
echo "done t=$(el)"
