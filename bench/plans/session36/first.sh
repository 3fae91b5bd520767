#!/usr/bin/env bash
# Session 36's first plan. Carry: .carry/s35d-gpu.tar.xz (bin/moe and the fused tests, built from branch
# next/s35-warm-code: main plus the fused kernel's warm-up pass) and .carry/icache_probe (the nvcc line at the
# top of bench/probes/icache_probe.cu). Session 35 found the fused kernel's warps waiting on instruction fetch
# after its stage 1 (ncu, caches flushed before the launch); first the probe says what running code for the
# first time costs an SM, idle and beside a weight stream, and whether an SM keeps a kernel's code from one
# launch to the next; then the warm-up pass's tests and A/B (session 35's fourth plan); then where the fused
# kernel and the swap-AB stage 2 stall with the caches kept (NCU_CACHE_CONTROL=none).
set -uo pipefail
export END=${END:-450}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s35d-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
if [ -x .carry/icache_probe ]; then
  timeout "$(cap 60 30)" .carry/icache_probe > $R/icache.log 2>&1
  echo "icache probe rc $?"
  cat $R/icache.log
  pack
fi
timeout "$(cap 40 40)" /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*Fused*' > $R/fused-tests.log 2>&1
echo "forced-path fused tests rc $?"
MOE_FUSED=1 timeout "$(cap 60 40)" /tmp/n/bin/cuda_fused_moe_test > $R/fused-moe-tests.log 2>&1
echo "fused-MoE tests with MOE_FUSED=1 rc $?"
grep -hE "^\[  (PASSED|FAILED)|\[fused fp8_block\] M=1" $R/fused-tests.log $R/fused-moe-tests.log | head -12
pack
for round in 1 2; do
  op_rows "r$round auto" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4 >> $R/warm.log
  for w in 0 1; do
    MOE_FUSED_WARM_CODE=$w op_rows "r$round fused-warm$w" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 \
      --M 1,2,4 --paths fused >> $R/warm.log
  done
done
pivot_rows $R/warm.log
pack
# The ring's size (session 35's first call, lockstep stage 2: 2 slots at 80 KB were 4 us faster at fp8 M=1
# than 6 at 200 KB), on the op and in the model (a smaller block leaves room for the next kernels' blocks).
env_ab_rows $R/smem.log MOE_FUSED_SMEM_KB "80 128 200" $M --shapes qwen3-30b-a3b --formats fp8_block \
  --M 1,2,4 --paths fused
pivot_rows $R/smem.log
(export MOE_FUSED=1 && decode_ab $M $R/fused-smem-decode.log MOE_FUSED_SMEM_KB 80 200)
pack
MOE_FUSED_TIMELINE=1 timeout "$(cap 30 20)" $M bench --shapes qwen3-30b-a3b --formats fp8_block --M 1 \
  --paths fused > $R/fused-tl.log 2>&1
grep -A20 "fused timeline" $R/fused-tl.log
decode_ab $M $R/fused-decode.log MOE_FUSED 0 1
pack
for k in fused_kernel swap_ab_kernel; do
  args="bench --shapes qwen3-30b-a3b --formats fp8_block --M 1 --copies 2"
  [ $k = fused_kernel ] && args="$args --paths fused"
  # swap_ab_kernel launches alternate stage 1, stage 2: an odd skip lands on a stage 2.
  BENCH_ARGS="$args" NCU_SKIP=21 NCU_SAMPLING=0 NCU_CACHE_CONTROL=none OUT=$R timeout "$(cap 120 30)" \
    scripts/profile-stalls $k $M > $R/stalls-$k.log 2>&1
  echo "profile-stalls $k rc $?"
  grep -E "Duration|Warp Cycles Per Issued|No Instruction|Stall Wait|Stall Barrier|Long Scoreboard" \
    $R/stalls-$k-details.txt 2>/dev/null | head -6
  rm -f $R/*.ncu-rep
  pack
done
echo "done t=$(el)"
