#!/usr/bin/env bash
# Session 49's first call (carry .carry/s49a.tar.xz: main's build; .carry/s49-timeline.tar.xz: its
# MOE_KERNEL_TIMELINE build as bin/moe-timeline). Session 48 got no device, so this is its plan too, with
# session 48's new measuring knobs (all off by default, built, not run on a GPU):
#   MOE_WGMMA_FIRST_WEIGHTS=1   the swapped kernel's fp8 stage 1 requests its first ring of weight tiles as
#                               soon as its first tile entry is read (session 47's op timeline: 2.3-3.1 us from
#                               stage 1's wait to its last block's first weight request at 64-256 tokens);
#   MOE_WGMMA_STAGE2_TRIGGER=1  the swapped stage 2 lets the combine launch as its blocks start (session 47:
#                               the combine's first block 2.3 us after stage 2's last block ended);
#   MOE_WGMMA_STAGE1_OVERLAPPED=1  stage 1 launched overlapped with the grouping below 64 tokens too (where
#                               it does not prefetch; session 47 at 16 tokens: stage 1 started 2.3 us after
#                               the grouping ended), measured as a 2x2 with the small prologue (8 / 32 tokens).
# Their forced-path GPU rows first (same bits, against the CPU reference), then a 2x2 of the two in one
# process (moe bench --env-ab A+B=..., new in session 48), stage 2's early weights with stage 2 per tile
# (MOE_WGMMA_EARLY_WEIGHTS, last measured before stage 2 ran per tile), session 48's small-prologue A/B, the
# op's launches with the new knobs on. On an H200 the quick gpu-check goes last (the H200 column: none since
# session 44), or on its own in the second call if this one runs short.
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s49a.tar.xz}" "${TIMELINE:-.carry/s49-timeline.tar.xz}" || exit 1
pack_every 15
timeout "$(cap 60 400)" $B/cuda_forced_paths_test --gtest_color=no \
  --gtest_filter='SmallPrologueGpu.*' > $R/small-prologue-test.log 2>&1
echo "small prologue test rc $? t=$(el)"
grep -E "^\[  (PASSED|FAILED)|Failure|DIFFER|changed" $R/small-prologue-test.log | head -8
grouped_forced_paths 120 380
grep -E "first weights.* M=(40|130) " $R/forced-paths.log | head -8
stop_on_fault MOE_WGMMA_FIRST_WEIGHTS=1 MOE_WGMMA_STAGE2_TRIGGER=1 && exit 0
knobs=MOE_WGMMA_FIRST_WEIGHTS+MOE_WGMMA_STAGE2_TRIGGER
bench_ab $R/first-trigger-ab.log $knobs 0+0,1+0,0+1,1+1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 16,32,64,256
echo "2x2 30B t=$(el)"
bench_ab $R/first-trigger-ab.log $knobs 0+0,1+1 $B/moe --shapes qwen3-235b-a22b-tp8,qwen3-next-80b-a3b \
  --formats fp8_block --M 64,256
echo "2x2 others t=$(el)"
ab_means $R/first-trigger-ab.log
pack
bench_ab $R/early-weights-ab.log MOE_WGMMA_EARLY_WEIGHTS 0,1 $B/moe --shapes qwen3-30b-a3b --formats fp8_block \
  --M 64,256
pack
early=MOE_SMALL_PROLOGUE_TOKENS+MOE_WGMMA_STAGE1_OVERLAPPED
for spec in qwen3-30b-a3b:fp8_block,bf16:9,16,32,48 qwen3-235b-a22b-tp8:fp8_block:16,32 deepseek-v3-tp8:fp8_block:16; do
  IFS=: read -r shape formats ms <<< "$spec"
  bench_ab $R/small-prologue-ab.log $early 8+0,32+0,8+1,32+1 $B/moe --shapes "$shape" \
    --formats "$formats" --M "$ms" > /dev/null
  echo "small prologue x stage 1 overlapped ab $shape t=$(el)"
done
ab_means $R/small-prologue-ab.log
pack
if [ -x $B/moe-timeline ] && [ "$(cap 40 0)" -ge 40 ]; then
  for on in 0 1; do
    MOE_WGMMA_FIRST_WEIGHTS=$on MOE_WGMMA_STAGE2_TRIGGER=$on MOE_WGMMA_STAGE1_OVERLAPPED=$on MOE_KERNEL_TIMELINE=1 \
      timeout "$(cap 30 10)" \
      $B/moe-timeline bench --shapes qwen3-30b-a3b --formats fp8_block --M 16,64,256 \
      > $R/op-timeline-knobs$on.log 2>&1
    grep -E "^qwen|prologue +[0-9]|align|GEMM [12] +1|combine +[0-9]|GEMM 1 +marks|layer \(" $R/op-timeline-knobs$on.log
  done
fi
pack
grep -q H200 $R/gpu.txt && quick_gpu_check $B 5
stop_packing
pack
echo "done t=$(el)"
