#!/usr/bin/env bash
# Session 32, third call. Carry: .carry/s32c-gpu.tar.xz (two moe binaries, no tests: bin/moe is the working
# tree on e4abdc9 with MOE_SWAP_AB_BELOW, a measuring override of Auto's switch to the grouped GEMM;
# bin/moe-old the same with aeb86d5's stage-2 combine by rows and combine.cu's own loop, so the pieces
# rewrite is measured against the form it replaced on one machine).
# 1. old / new, two rounds: Qwen3-30B-A3B fp8 and bf16 M=1,2,4,8, Qwen3-235B-A22B TP8 fp8 M=1; the decode
#    step, three rounds;
# 2. Auto's threshold (the second call, an H100, had the swap-AB stages ahead at 48 tokens where Auto takes
#    the grouped GEMM: Qwen3-30B-A3B fp8 215.0 against 227.5 us, Qwen3-235B-A22B TP8 116.8 against 140.5;
#    DeepSeek-V3 TP8 fp8 at 24: 223.6 against 257.3): MOE_SWAP_AB_BELOW 48 / 64 at 48 and 56 tokens, 24 / 32
#    for DeepSeek-V3 TP8 fp8 at 24 and 28, and the forced paths on Qwen3-Next (session 28 had its grouped
#    GEMM ahead at 48);
# 3. MOE_SWAP_AB_JOINT_WAVE 0 / 1 on DeepSeek-V3 full fp8 M=1,2,8 (the second call: its TP8 shard M=1 35.4
#    -> 33.8 us, Qwen3-Next slower).
set -uo pipefail
export END=${END:-400}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s32c-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
ab_op_rows /tmp/n/bin/moe-old $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4,8 > $R/pieces-ab.log
ab_op_rows /tmp/n/bin/moe-old $M --shapes qwen3-235b-a22b-tp8 --formats fp8_block --M 1 >> $R/pieces-ab.log
pivot_rows $R/pieces-ab.log
binaries_ab $R/pieces-decode.log $M /tmp/n/bin/moe-old 3
pack
env_ab_rows $R/below.log MOE_SWAP_AB_BELOW "48 64" $M --shapes qwen3-30b-a3b,qwen3-next-80b-a3b,qwen3-235b-a22b-tp8 \
  --formats fp8_block,bf16 --M 48,56
env_ab_rows $R/below.log MOE_SWAP_AB_BELOW "24 32" $M --shapes deepseek-v3-tp8 --formats fp8_block --M 24,28
pivot_rows $R/below.log
PT_SHAPES=qwen3-next-80b-a3b PT_M=32,48,64 timeout "$(cap 90 60)" scripts/path-thresholds $M > $R/path-thresholds.log \
  2>/dev/null
cat $R/path-thresholds.log
pack
env_ab_rows $R/joint.log MOE_SWAP_AB_JOINT_WAVE "0 1" $M --shapes deepseek-v3 --formats fp8_block --M 1,2,8 --copies 3
pivot_rows $R/joint.log
pack
echo "done t=$(el)"
