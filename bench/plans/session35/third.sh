#!/usr/bin/env bash
# Session 35's third plan (the device time's last ~12 minutes). The second call: the fused MoE's stage 2 warp
# by warp cut fp8 M=1 30.8 -> 26.4 us (Auto 25.2), but after its stage 1 the kernel still spends ~2 us at
# the grid barrier, 3.4 us staging h although one L2 round trip of h then took 0.25 us, and 1.5 us on one
# warp's first 16-row tile of data already in shared memory. Where its warps stall, per SASS instruction
# (ncu's warp-state sampling at its finest interval), tells whether that is instruction fetch (a 170 KB
# kernel) or the chains themselves. Then the counter test's MOE_FUSED=1 mend, fp8 h staged a warp per
# 128-group (MOE_FUSED_H_GROUPS=1, new default; 0: stage_rows) with its tests and its A/B beside Auto, and on
# an H200 the probe. Carry: .carry/s35c-gpu.tar.xz (bin/moe, the fused tests), the probe.
set -uo pipefail
export END=${END:-250}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s35c-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
MOE_FUSED=1 timeout "$(cap 30 30)" /tmp/n/bin/cuda_fused_moe_test --gtest_filter='FusedMoeGpuCounters*' \
  > $R/counter-test-fused.log 2>&1
echo "counter test with MOE_FUSED=1 rc $?"
grep -E "^\[  (PASSED|FAILED)|Auto takes" $R/counter-test-fused.log | head -6
timeout "$(cap 40 40)" /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*Fused*' > $R/fused-tests.log 2>&1
echo "forced-path fused tests rc $?"
grep -hE "^\[  (PASSED|FAILED)|\[fused" $R/fused-tests.log | head -10
pack
BENCH_ARGS="bench --shapes qwen3-30b-a3b --formats fp8_block --M 1 --paths fused --copies 2" NCU_SKIP=20 \
  NCU_SAMPLING=0 OUT=$R timeout "$(cap 120 40)" scripts/profile-stalls fused_kernel $M > $R/stalls.log 2>&1
echo "profile-stalls rc $?"
tail -3 $R/stalls.log
grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|No Instruction|Stall" $R/stalls-fused_kernel-details.txt \
  2>/dev/null | head -12
rm -f $R/*.ncu-rep
pack
if grep -q H200 $R/gpu.txt && [ -x .carry/queue_latency_probe ]; then
  queue_probe .carry/queue_latency_probe
  pack
fi
for round in 1 2; do
  op_rows "r$round auto" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4 >> $R/fused-vs-auto.log
  for h in 0 1; do
    MOE_FUSED_H_GROUPS=$h op_rows "r$round fused-h$h" $M --shapes qwen3-30b-a3b --formats fp8_block --M 1,2,4 \
      --paths fused >> $R/fused-vs-auto.log
  done
done
MOE_FUSED_TIMELINE=1 timeout "$(cap 30 20)" $M bench --shapes qwen3-30b-a3b --formats fp8_block --M 1 \
  --paths fused > $R/fused-tl.log 2>&1
grep -A20 "fused timeline" $R/fused-tl.log
pivot_rows $R/fused-vs-auto.log
pack
echo "done t=$(el)"
