#!/usr/bin/env bash
# Session 29, first call. Carries: .carry/s29d-gpu.tar.xz (branch next/s29-routing at 9ad0d9b, NOT RUN ON A
# GPU: the bench's DeepSeek layers without a shared-expert gate, as DeepSeek-V3's shared_experts; the gate's
# dot product loaded 8 elements a lane, four chunks a trip, on a warp of its own; SigmoidGrouped compiled as
# its own router kind; the one-block prologue's quantisation loads batched four items a warp; the swap-AB
# stages' balanced K warps behind MOE_SWAP_AB_BALANCED_K, off) and
# .carry/s28e-moe.tar.xz (main's bin/moe at 1923ea1's kernels).
# Session 28 found DeepSeek's one-block prologue taking 44 us at one token under ncu against 7 for Qwen3's
# (37.7 after computing each expert's group once), its other warps waiting at the barrier for warp 0, which
# routed and then ran the bench layer's shared-expert gate (7168 wide, 56 trips each waiting for its loads).
# Steps:
#  1. the prologue's stalls at a fine sampling interval, DeepSeek-V3 TP8 and Qwen3-Next at M=1 (branch);
#  2. main's moe, the branch's, and the branch's with MOE_SWAP_AB_BALANCED_K=1 at M=1-32 (two rounds;
#     Qwen3-Next has a gate in both: the gate's loads; DeepSeek's rows lose the gate on the branch), the
#     prologue's time under ncu for main's and the branch's;
#     the grouping on one block against three launches from 129 tokens (MOE_GROUPING_MULTIBLOCK, main's);
#  3. gpu-check of the branch (its new test of the balanced K warps, its switched cases; on an H200 if one
#     comes: the targets table's H200 column is still session 23's).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s29d-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/s28e-moe.tar.xz
record_gpu $R/gpu.txt
mkdir -p $R/st
for shape in deepseek-v3-tp8 qwen3-next-80b-a3b; do
  MOE_BIN=/tmp/n/bin NCU_SKIP=8 NCU_SAMPLING=0 OUT=$R/st/prologue-$shape-m1 \
    BENCH_ARGS="bench --shapes $shape --formats fp8_block --M 1 --copies 2" \
    timeout "$(cap 60 400)" scripts/profile-stalls prologue_small 2>&1 | tail -1
  python3 scripts/stall-summary $R/st/prologue-$shape-m1/stalls-prologue_small-sass.csv 12 | head -16
done
rm -f $R/st/*/*.ncu-rep
pack
for round in 1 2; do
  for v in main branch balanced; do
    b=/tmp/n/bin/moe && [ $v = main ] && b=/tmp/m/bin/moe
    bal=0 && [ $v = balanced ] && bal=1
    MOE_SWAP_AB_BALANCED_K=$bal op_rows "round=$round $v" $b --shapes deepseek-v3-tp8,qwen3-30b-a3b,qwen3-235b-a22b-tp8,qwen3-next-80b-a3b \
      --formats fp8_block,bf16 --M 1,2,4,8,16,32
  done
done > $R/ab-routing-balanced.log
cut -c1-90 $R/ab-routing-balanced.log | grep -E " (1|8|32) " 
echo "a/b t=$(el)"
# The grouping from 129 tokens runs as three launches (count, scan, place: 3.6 + 4.2 + 5.8 us at M=256 under
# ncu) where one block took 5.7 at M=64: MOE_GROUPING_MULTIBLOCK=0 keeps the one-block kernel, no rebuild.
for round in 1 2; do
  for v in 1 0; do
    MOE_GROUPING_MULTIBLOCK=$v op_rows "round=$round multiblock=$v" /tmp/m/bin/moe \
      --shapes qwen3-30b-a3b,qwen3-235b-a22b-tp8,deepseek-v3-tp8 --formats fp8_block --M 192,256,512,1024
  done
done > $R/ab-grouping.log
cut -c1-90 $R/ab-grouping.log | grep -E " (256|1024) "
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in /tmp/m/bin/moe /tmp/n/bin/moe; do
  for shape in deepseek-v3-tp8 qwen3-next-80b-a3b; do
    timeout 40 "$NCU" --clock-control none -k 'regex:prologue' --launch-skip 24 --launch-count 2 \
      --metrics gpu__time_duration.sum $b bench --shapes $shape --formats fp8_block --M 1 --copies 2 2>&1 |
      grep -E "gpu__time" | sed "s|^|$b $shape |"
  done
done | tee $R/prologue-times.log
pack
quick_gpu_check /tmp/n/bin 5
grep -E "balanced K" $R/gc/gpu-tests.log | head -20
pack
echo "done t=$(el)"
