#!/usr/bin/env bash
# Session 31, third call. Carry: .carry/s31c-gpu.tar.xz (branch next/s31-shared-warm: the shared expert's warm
# as a byte budget, MOE_SHARED_WARM_KB, on by default at 8192 KB; NOT RUN ON A GPU in this form).
#  1. the budget's A/B: 0 (off), 4096, 8192, 12288 KB on DeepSeek-V3 full fp8 M=1,2,4,8 (3 layer copies),
#     DeepSeek-V3 TP8 and Qwen3-Next fp8 M=1,2,4,8 and bf16 M=1,8, two rounds;
#  2. quick gpu-check of the branch as it would land (its default on).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s31c-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
for round in 1 2; do
  for kb in 0 4096 8192 12288; do
    [ "$(cap 40 300)" -lt 40 ] && break 2
    (export MOE_SHARED_WARM_KB=$kb && op_rows "r$round kb=$kb" $M --shapes deepseek-v3 --formats fp8_block \
      --M 1,2,4,8 --copies 3 && op_rows "r$round kb=$kb" $M --shapes deepseek-v3-tp8,qwen3-next-80b-a3b \
      --formats fp8_block --M 1,2,4,8 && op_rows "r$round kb=$kb" $M --shapes deepseek-v3-tp8,qwen3-next-80b-a3b \
      --formats bf16 --M 1,8) >> $R/warm-kb-ab.log
  done
  pack
  echo "round $round t=$(el)"
done
awk '{print $1, $2, $3, $4, $5, $6}' $R/warm-kb-ab.log | sort -k3,3 -k4,4 -k5,5n -k2,2 -k1,1 |
  awk '{k=$3" "$4" "$5; if (k!=last) {printf "\n%s %s M=%s:", $3, $4, $5; last=k} printf " %s/%s %s", $1, $2, $6}'
echo
quick_gpu_check /tmp/n/bin 5
grep -E "WarmingItsWeights|shared beside" $R/gc/gpu-tests.log | head -4
pack
echo "done t=$(el)"
