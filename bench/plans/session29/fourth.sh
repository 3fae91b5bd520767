#!/usr/bin/env bash
# Session 29, fourth call (carry .carry/s29f-gpu.tar.xz, the landing candidate: its balanced K warps now run
# the TP8 shards' stage 2 by default).
#  1. the tensor-parallel CLI check (logits, greedy tokens at TP 1/2/4/8, no timing);
#  2. the swap-AB stages' L2 requests ahead (MOE_SWAP_AB_L2_AHEAD, measured slower in session 18, off) once
#     more at the new defaults: the op at M=1..8 and the decode step, alternated, two rounds.
set -uo pipefail
export END=${END:-400}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s29f-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
TP_CHECK_NO_BENCH=1 tp_cli /tmp/n/bin/moe 250
pack
for round in 1 2; do
  for d in 0 1 2; do
    MOE_SWAP_AB_L2_AHEAD=$d op_rows "round=$round ahead=$d" /tmp/n/bin/moe --shapes qwen3-30b-a3b,deepseek-v3-tp8 \
      --formats fp8_block --M 1,2,4,8
  done
done > $R/ab-l2-ahead.log
cut -c1-90 $R/ab-l2-ahead.log | grep -E " (1|8) "
decode_ab /tmp/n/bin/moe $R/decode-l2-ahead.log MOE_SWAP_AB_L2_AHEAD 0 2 0 2
pack
echo "done t=$(el)"
