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
for round in 1 2; do
  for n in 0 1 8; do
    [ "$(cap 30 60)" -lt 30 ] && break 2
    (export MOE_SWAP_AB_COMBINE=$n && op_rows "r$round c=$n" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
      --M 1,2,4,8 && op_rows "r$round c=$n" $M --shapes qwen3-235b-a22b-tp8 --formats fp8_block --M 1,8) \
      >> $R/combine-pieces-ab.log
    MOE_SWAP_AB_COMBINE=$n timeout 40 $M bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 \
      --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/r$round c=$n /" >> $R/combine-pieces-decode.log
  done
  pack
done
awk '{print $1, $2, $3, $4, $5, $6}' $R/combine-pieces-ab.log | sort -k3,3 -k4,4 -k5,5n -k2,2 -k1,1 |
  awk '{k=$3" "$4" "$5; if (k!=last) {printf "\n%s %s M=%s:", $3, $4, $5; last=k} printf " %s/%s %s", $1, $2, $6}'
echo
cat $R/combine-pieces-decode.log
pack
echo "done t=$(el)"
