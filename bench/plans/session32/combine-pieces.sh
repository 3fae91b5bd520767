#!/usr/bin/env bash
# Session 32 (written in session 31, not yet run). Carry: .carry/s32a-gpu.tar.xz (branch
# next/s32-combine-pieces: stage 2's combine reads 16-byte pieces of y, every slot's load in flight, so a block
# that is the last of several row tiles at 2-8 tokens has a shorter tail; NOT RUN ON A GPU). Stage 2's combine
# at 0 (the launch), 1 (main's default) and 8 tokens, two rounds: Qwen3-30B-A3B fp8 and bf16 M=1,2,4,8,
# Qwen3-235B-A22B TP8 fp8 M=1,8; the decode step at batches 1 and 8; cuda_fused_moe_test first.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s32a-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
timeout 120 /tmp/n/bin/cuda_fused_moe_test --gtest_color=no > $R/fused-test.log 2>&1
echo "cuda_fused_moe_test rc $? t=$(el)"
grep -E "^\[  FAILED|^\[  PASSED" $R/fused-test.log | head -4
pack
env_ab_rows $R/combine-pieces-ab.log MOE_SWAP_AB_COMBINE "0 1 8" $M --shapes qwen3-30b-a3b \
  --formats fp8_block,bf16 --M 1,2,4,8
env_ab_rows $R/combine-pieces-ab.log MOE_SWAP_AB_COMBINE "0 1 8" $M --shapes qwen3-235b-a22b-tp8 \
  --formats fp8_block --M 1,8
pack
pivot_rows $R/combine-pieces-ab.log
decode_ab $M $R/combine-pieces-decode.log MOE_SWAP_AB_COMBINE 0 1 8 0 1 8
pack
echo "done t=$(el)"
