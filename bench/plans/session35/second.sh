#!/usr/bin/env bash
# Session 35's second plan. The first call (H100) put the one-launch fused MoE's time after its stage 1 in
# its consumers: stage 2 took ~2 us per item of 32 KB already in shared memory (all eight warps in lockstep,
# one barrier per tile round), whatever the bytes in flight (MOE_FUSED_AHEAD 0-3 changed ~1 us). Now stage 2
# goes warp by warp (MOE_FUSED_WARP_TILES=1, the default; 0: the lockstep items): its GPU tests first, then
# the A/B beside the swap-AB path (Auto) in the same lease, the timeline, and the model's decode step.
# Also in this binary (no knob): the grid barrier's generation read at the start, the row staging without local
# memory, the fp8 scales loaded four at a time.
# Carry: .carry/s35b-gpu.tar.xz (bin/moe, the fused tests) and .carry/queue_latency_probe.
set -uo pipefail
export END=${END:-400}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s35b-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
if grep -q H200 $R/gpu.txt && [ -x .carry/queue_latency_probe ]; then
  queue_probe .carry/queue_latency_probe
  pack
fi
timeout "$(cap 60 60)" /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*Fused*' > $R/fused-tests.log 2>&1
echo "forced-path fused tests rc $?"
MOE_FUSED_AHEAD=1 timeout "$(cap 40 60)" /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*Fused*' \
  > $R/fused-tests-ahead1.log 2>&1
echo "forced-path fused tests (ahead 1) rc $?"
MOE_FUSED=1 timeout "$(cap 90 60)" /tmp/n/bin/cuda_fused_moe_test > $R/fused-moe-tests.log 2>&1
echo "fused-MoE tests with MOE_FUSED=1 rc $?"
grep -hE "^\[  (PASSED|FAILED)|\[fused" $R/fused-tests*.log $R/fused-moe-tests.log | head -24
pack
for ahead in 0 1; do
  (export MOE_FUSED_AHEAD=$ahead && env_ab_rows $R/warp-tiles.log MOE_FUSED_WARP_TILES "0 1" $M \
    --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4 --paths fused)
  sed -i "s/^\(r[12] MOE_FUSED_WARP_TILES=[01]\) /\1,ahead=$ahead /" $R/warp-tiles.log
done
for round in 1 2; do
  op_rows "r$round auto" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4 >> $R/warp-tiles.log
done
pivot_rows $R/warp-tiles.log
pack
for ahead in 0 1; do
  MOE_FUSED_AHEAD=$ahead MOE_FUSED_TIMELINE=1 timeout "$(cap 30 30)" $M bench --shapes qwen3-30b-a3b \
    --formats fp8_block --M 1 --paths fused > $R/fused-tl-ahead$ahead.log 2>&1
  echo "fused timeline ahead=$ahead rc $?"
  grep -vE "^ *[0-9]+ +[0-9]" $R/fused-tl-ahead$ahead.log | grep -A20 "fused timeline"
done
pack
decode_ab $M $R/fused-decode.log MOE_FUSED 0 1
pack
echo "done t=$(el)"
