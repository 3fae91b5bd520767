#!/usr/bin/env bash
# Session 32, first call. Carry: .carry/s32-gpu.tar.xz, built from the working tree on top of aeb86d5 (main
# as session 31 left it, whose host-only commits after 5e88cdb never ran on a GPU) with two changes rewritten
# this session (session 31's branches did not survive): stage 2's combine in 16-byte pieces of y
# (combine_piece.cuh, shared with combine.cu) over all the tiles a block is last on at once, and
# MOE_SHARED_EARLY (the shared expert's stages before the prologue, shared_prep.cu; off by default).
# 1. quick gpu-check at the defaults (every GPU test, among them stage 2's combine up to 8 tokens and the
#    shared expert's early start, both compared bit for bit; the op and model benchmarks);
# 2. MOE_SWAP_AB_COMBINE 0 / 1 / 8, two rounds: Qwen3-30B-A3B fp8 and bf16 M=1,2,4,8;
# 3. MOE_SHARED_EARLY 0 / 1, two rounds: DeepSeek-V3 full fp8 M=1,2,8 (3 copies), its TP8 shard and
#    Qwen3-Next fp8 M=1,8;
# 4. the decode step with MOE_SWAP_AB_COMBINE 0 / 1 / 8 (twice).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s32-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
quick_gpu_check /tmp/n/bin 300
pack
env_ab_rows $R/combine-pieces-ab.log MOE_SWAP_AB_COMBINE "0 1 8" $M --shapes qwen3-30b-a3b \
  --formats fp8_block,bf16 --M 1,2,4,8
pack
env_ab_rows $R/shared-early-ab.log MOE_SHARED_EARLY "0 1" $M --shapes deepseek-v3 --formats fp8_block --M 1,2,8 \
  --copies 3
env_ab_rows $R/shared-early-ab.log MOE_SHARED_EARLY "0 1" $M --shapes deepseek-v3-tp8,qwen3-next-80b-a3b \
  --formats fp8_block --M 1,8
pack
pivot_rows $R/combine-pieces-ab.log
pivot_rows $R/shared-early-ab.log
[ "$(cap 80 0)" -ge 80 ] && decode_ab $M $R/combine-pieces-decode.log MOE_SWAP_AB_COMBINE 0 1 8 0 1 8
pack
echo "done t=$(el)"
