#!/usr/bin/env bash
# Session 31, second call. Carry: .carry/s31b-gpu.tar.xz (branch next/s31-shared-warm: MOE_SHARED_WARM, NOT RUN
# ON A GPU yet: a side-stream kernel requests the first N % of each of the shared expert's gate/up rows into
# L2 before the prologue, whose routing leaves DRAM idle for ~5 us; DeepSeek-V3 full fp8 M=1 is 147 us
# against a 144 target on the H100).
#  1. cuda_fused_moe_test with the warm at 100 % (every shared-expert shape at M <= 8 takes it);
#  2. the MoE op, DeepSeek-V3 full fp8 M=1 and 8 (3 layer copies), DeepSeek-V3 TP8 and Qwen3-Next fp8
#     M=1 and 8, for each setting, two rounds alternated.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s31b-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
MOE_SHARED_WARM=100 timeout 120 /tmp/n/bin/cuda_fused_moe_test --gtest_color=no > $R/fused-test-warm.log 2>&1
echo "cuda_fused_moe_test warm=100 rc $? t=$(el)"
grep -E "^\[  FAILED|^\[  PASSED" $R/fused-test-warm.log | head -5
pack
cfgs=("off MOE_SHARED_WARM=0" "b25 MOE_SHARED_WARM=25" "b50 MOE_SHARED_WARM=50" "b100 MOE_SHARED_WARM=100"
  "l50 MOE_SHARED_WARM=50 MOE_SHARED_WARM_KIND=2" "b50x32 MOE_SHARED_WARM=50 MOE_SHARED_WARM_BLOCKS=32")
for round in 1 2; do
  for c in "${cfgs[@]}"; do
    [ "$(cap 40 0)" -lt 40 ] && break 2
    # shellcheck disable=SC2086
    (export ${c#* } && op_rows "r$round ${c%% *}" $M --shapes deepseek-v3 --formats fp8_block --M 1,8 \
      --copies 3) | tee -a $R/shared-warm-ab.log
  done
  for c in "${cfgs[0]}" "${cfgs[2]}" "${cfgs[3]}"; do
    [ "$(cap 40 0)" -lt 40 ] && break 2
    # shellcheck disable=SC2086
    (export ${c#* } && op_rows "r$round ${c%% *}" $M --shapes deepseek-v3-tp8,qwen3-next-80b-a3b \
      --formats fp8_block --M 1,8) | tee -a $R/shared-warm-ab.log
  done
  pack
  echo "round $round t=$(el)"
done
awk '{print $1, $2, $3, $4, $5, $6}' $R/shared-warm-ab.log | sort -k3,3 -k5,5n -k2,2 -k1,1
pack
echo "done t=$(el)"
