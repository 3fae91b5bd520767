#!/usr/bin/env bash
# Session 31, sixth call. Carry: .carry/s31f-gpu.tar.xz (branch next/s31-stage2-combine: MOE_SWAP_AB_COMBINE.
# The fifth call found it slower at M >= 2 (an arrival per row tile stalled each block's next tile), an
# expert-parallel rank with no active expert left its output unwritten and one local expert was refused; now
# a block arrives once after all its tiles, slot 0's blocks write zeros when nothing is active, and a single
# local expert keeps the combine launch. NOT RUN ON A GPU in this form.
#  1. cuda_fused_moe_test (its new StageTwoCombinesSameBits);
#  2. the MoE op with it off / on, two rounds: Qwen3-30B-A3B fp8 and bf16 M=1,2,4,8, Qwen3-235B-A22B TP8
#     fp8 M=1,8;
#  3. the model's decode step off / on, two rounds;
#  4. quick gpu-check with it on (tests, cases, fixtures, benchmarks); on an H200, with the defaults.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s31f-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
timeout 120 /tmp/n/bin/cuda_fused_moe_test --gtest_color=no > $R/fused-test.log 2>&1
echo "cuda_fused_moe_test rc $? t=$(el)"
grep -E "^\[  FAILED|^\[  PASSED|stage 2 combines\] (small|wide-k) fp8_block M=(1|8)" $R/fused-test.log | head -12
pack
for round in 1 2; do
  for on in 0 1; do
    [ "$(cap 30 200)" -lt 30 ] && break 2
    (export MOE_SWAP_AB_COMBINE=$on && op_rows "r$round c=$on" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
      --M 1,2,4,8 && op_rows "r$round c=$on" $M --shapes qwen3-235b-a22b-tp8 --formats fp8_block --M 1,8) \
      >> $R/combine-ab.log
  done
done
awk '{print $1, $2, $3, $4, $5, $6}' $R/combine-ab.log | sort -k3,3 -k4,4 -k5,5n -k2,2 -k1,1 |
  awk '{k=$3" "$4" "$5; if (k!=last) {printf "\n%s %s M=%s:", $3, $4, $5; last=k} printf " %s/%s %s", $1, $2, $6}'
echo
for round in 1 2; do
  for on in 0 1; do
    [ "$(cap 20 170)" -lt 20 ] && break 2
    MOE_SWAP_AB_COMBINE=$on timeout 40 $M bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 \
      --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/r$round c=$on /" | tee -a $R/combine-decode.log
  done
done
pack
echo "t=$(el)"
# On an H200 (none since session 23) the gpu-check keeps the defaults (main's behaviour: the targets table's
# H200 column); on an H100 it runs with the combine on.
grep -q H200 $R/gpu.txt || export MOE_SWAP_AB_COMBINE=1
echo "gpu-check with MOE_SWAP_AB_COMBINE=${MOE_SWAP_AB_COMBINE:-0}"
quick_gpu_check /tmp/n/bin 5
grep -E "StageTwoCombines" $R/gc/gpu-tests.log | head -3
pack
echo "done t=$(el)"
