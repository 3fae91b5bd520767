#!/usr/bin/env bash
# Session 34, second call. Carry: .carry/s34b-gpu.tar.xz (main + MOE_SWAP_AB_EARLY_STEPS: a decode call's
# stage 2 copies each warp's next 1-2 weight steps into shared memory by cp.async before its wait; off by
# default; bin/moe, bin/cuda_fused_moe_test, and the MOE_SWAP_AB_TIMELINE measuring build as
# bin/moe-measuring). Session 33's timeline (H100, Qwen3-30B-A3B fp8 M=1): most stage-2 blocks become resident
# only as stage-1 blocks leave (start median 14.2 us), and each warp's second step is requested only after h
# is staged (18.5), arriving at 21.0. With it the whole walk is requested at the block's start.
# The same-bits GPU test, the timeline 0 / 1 / 2, then the A/B on the op and the decode step.
set -uo pipefail
export END=${END:-520}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s34b-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
if grep -q H200 $R/gpu.txt; then
  timeout 40 $M bench --read-sweep > $R/read-sweep.log 2>&1
  echo "read sweep rc $?"
  grep -v "^read sweep" $R/read-sweep.log | tail -40
  pack
fi
timeout 120 /tmp/n/bin/cuda_fused_moe_test --gtest_filter='*EarlyStepsSameBits*:*L2AheadSameBits*' > $R/bits.log 2>&1
echo "bits test rc $?"
grep -E "^\[  (FAILED|PASSED)|^\[early steps\]|rror" $R/bits.log | tail -12
pack
for v in 0 1 2; do
  MOE_SWAP_AB_EARLY_STEPS=$v MOE_SWAP_AB_TIMELINE=1 timeout 40 /tmp/n/bin/moe-measuring bench --shapes qwen3-30b-a3b \
    --formats fp8_block --M 1 --paths auto > $R/swtl-early$v.log 2>&1
  echo "timeline early=$v rc $?"
  grep -E "^qwen3|stage" $R/swtl-early$v.log | tail -11
done
pack
env_ab_rows $R/early.log MOE_SWAP_AB_EARLY_STEPS "0 1 2" $M --shapes qwen3-30b-a3b --formats fp8_block,bf16 --M 1,2,4,8
pack
env_ab_rows $R/early.log MOE_SWAP_AB_EARLY_STEPS "0 1 2" $M --shapes qwen3-235b-a22b-tp8,deepseek-v3-tp8,qwen3-next-80b-a3b \
  --formats fp8_block --M 1,8
pack
decode_ab $M $R/early-decode.log MOE_SWAP_AB_EARLY_STEPS 0 1 2 0 1 2
pack
env_ab_rows $R/early.log MOE_SWAP_AB_EARLY_STEPS "0 2" $M --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
pivot_rows $R/early.log
pack
echo "done t=$(el)"
