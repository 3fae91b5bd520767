#!/usr/bin/env bash
# Session 33, fourth call. Carry: .carry/s33e-gpu.tar.xz (main with MOE_SWAP_AB_BULK_L2: each swap-AB block
# asks L2 for all of its weight rows at its start, by bulk prefetches of up to 16 KB, a bit per stage; off by
# default). The third call's read sweep (H100): the swap-AB stages' 32-row steps reach 93-95 % of the read
# bandwidth with 32-64 KB in flight per SM, so their one-token stages (~70-80 %) lose to their start and their
# per-warp chain of steps, not to the stream: with bulk requests the call's bytes are all in flight at once.
# The same-bits GPU test, then the A/B (0 / 1 / 2 / 3) on the op and the decode step; on an H200 the read
# sweep first.
set -uo pipefail
export END=${END:-130}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s33e-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
if grep -q H200 $R/gpu.txt; then
  timeout 30 $M bench --read-sweep > $R/read-sweep.log 2>&1
  grep -v "^read sweep" $R/read-sweep.log
  pack
fi
timeout 50 /tmp/n/bin/cuda_fused_moe_test --gtest_filter='*L2AheadSameBits*:*SharedExpert*Warm*' > $R/bits.log 2>&1
echo "bits test rc $?"
grep -E "^\[  (FAILED|PASSED)|^\[l2 ahead\]" $R/bits.log | tail -20
pack
env_ab_rows $R/bulk.log MOE_SWAP_AB_BULK_L2 "0 3" $M --shapes qwen3-30b-a3b --formats fp8_block --M 1,2,8
pack
env_ab_rows $R/bulk.log MOE_SWAP_AB_BULK_L2 "0 3" $M --shapes deepseek-v3 --formats fp8_block --M 1 --copies 3
pack
decode_ab $M $R/bulk-decode.log MOE_SWAP_AB_BULK_L2 0 3 0 3
pack
env_ab_rows $R/bulk.log MOE_SWAP_AB_BULK_L2 "0 3" $M --shapes qwen3-235b-a22b-tp8,deepseek-v3-tp8 --formats fp8_block \
  --M 1
pivot_rows $R/bulk.log
pack
echo "done t=$(el)"
