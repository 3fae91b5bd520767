#!/usr/bin/env bash
# Session 29, second call. Carries: .carry/s29e-gpu.tar.xz (branch at a8863b3: first.sh's branch and the
# single-block grouping up to 2048 pairs) and .carry/s28e-moe.tar.xz (main's bin/moe). The first call had Qwen3-30B-A3B fp8 M=2 at 43.0 us on the
# branch against 39.2 on main (both rounds; M=1 and M=4 equal), and the balanced K warps 0.8 us slower at
# M=1 but 1-2 us faster at M=4..32 (the TP8 shapes 10-20 % faster at every M). Steps:
#  1. every kernel of the M=2 call, main's and the branch's (which launch grew);
#  2. every kernel of the M=1 call, the branch's with and without the balanced K warps;
#  3. the model's decode step (batches 1 and 8) with the balanced K warps off and on, alternated, 3 rounds.
set -uo pipefail
export END=${END:-400}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s29e-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s28e-moe.tar.xz
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
for v in main branch; do
  b=/tmp/n/bin/moe && [ $v = main ] && b=/tmp/m/bin/moe
  OPK_COUNT=8 timeout 60 scripts/op-kernel-times qwen3-30b-a3b fp8_block 2 $b 2>&1 | sed "s/^/m2 $v /"
done | tee $R/m2-kernels.log
for bal in 0 1; do
  MOE_SWAP_AB_BALANCED_K=$bal OPK_COUNT=8 timeout 60 scripts/op-kernel-times qwen3-30b-a3b fp8_block 1 /tmp/n/bin/moe 2>&1 |
    sed "s/^/m1 bal=$bal /"
done | tee $R/m1-kernels.log
pack
for bal in 0 1 0 1 0 1; do
  MOE_SWAP_AB_BALANCED_K=$bal timeout 40 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block \
    --batches 1,8 --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/bal=$bal /"
done | tee $R/decode-balanced.log
# The op at M=2 once more, main / branch alternated (fp8 and bf16, three shapes).
for round in 1 2; do
  for v in main branch; do
    b=/tmp/n/bin/moe && [ $v = main ] && b=/tmp/m/bin/moe
    op_rows "round=$round $v" $b --shapes qwen3-30b-a3b,qwen3-235b-a22b-tp8 --formats fp8_block --M 1,2,3,4
    op_rows "round=$round $v" $b --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 128,192,256,384,512
  done
done | tee $R/m2-ab.log | cut -c1-90
pack
echo "done t=$(el)"
