#!/usr/bin/env bash
# Session 35's fourth plan (the device time's last minutes). The third call (H200): ncu put the fused
# kernel's largest warp-stall share on instruction fetch (no instruction: 2.62 of 8.89 cycles per issued
# instruction), on code each SM runs once per call; a new h staging with fewer instructions was 1 us slower
# than the old one whose code the x staging had already run. Now the code after the grid barrier runs twice
# where a block waits there: a warm-up pass on this call's data storing nothing outside shared memory, then
# the real one (MOE_FUSED_WARM_CODE=1, the default; 0: off). Its tests, then the A/B beside Auto, the timeline
# and the model's decode step. Carry: .carry/s35d-gpu.tar.xz (bin/moe, the fused tests) built from the branch
# next/s35-warm-code (main keeps the fused kernel as the third call tested it; not run: no device time left).
set -uo pipefail
export END=${END:-190}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s35d-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
timeout "$(cap 40 40)" /tmp/n/bin/cuda_forced_paths_test --gtest_filter='*Fused*' > $R/fused-tests-warm1.log 2>&1
echo "forced-path fused tests rc $?"
MOE_FUSED=1 timeout "$(cap 50 40)" /tmp/n/bin/cuda_fused_moe_test > $R/fused-moe-tests.log 2>&1
echo "fused-MoE tests with MOE_FUSED=1 rc $?"
grep -hE "^\[  (PASSED|FAILED)|\[fused fp8_block\] M=1" $R/fused-tests-warm*.log $R/fused-moe-tests.log | head -12
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
MOE_FUSED_TIMELINE=1 timeout "$(cap 30 20)" $M bench --shapes qwen3-30b-a3b --formats fp8_block --M 1 \
  --paths fused > $R/fused-tl.log 2>&1
grep -A20 "fused timeline" $R/fused-tl.log
pack
decode_ab $M $R/fused-decode.log MOE_FUSED 0 1
pack
echo "done t=$(el)"
