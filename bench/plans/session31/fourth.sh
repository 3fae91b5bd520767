#!/usr/bin/env bash
# Session 31, fourth call. Carry: .carry/s31d-gpu.tar.xz (branch next/s31-stage2-warm: MOE_STAGE2_WARM_KB, NOT
# RUN ON A GPU yet: after the prologue a side-stream kernel requests the first bytes of the active experts'
# down rows into L2 while stage 1 streams the gate/up rows, so stage 2's first steps find them in L2).
#  1. cuda_fused_moe_test with it at 4096 KB;
#  2. the MoE op at 0 / 2048 / 4096 / 8192 KB (and 4096 as line requests), two rounds: Qwen3-30B-A3B fp8
#     M=1,2,4,8 and bf16 M=1,8, DeepSeek-V3 full fp8 M=1,8 (3 copies), its TP8 shard and Qwen3-Next fp8 M=1,8;
#  3. the model's decode step at 0 / 4096 / 8192, two rounds.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s31d-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
MOE_STAGE2_WARM_KB=4096 timeout 120 /tmp/n/bin/cuda_fused_moe_test --gtest_color=no > $R/fused-test-warm2.log 2>&1
echo "cuda_fused_moe_test stage2 warm rc $? t=$(el)"
grep -E "^\[  FAILED|^\[  PASSED" $R/fused-test-warm2.log | head -5
pack
cfgs=("kb0 MOE_STAGE2_WARM_KB=0" "kb2048 MOE_STAGE2_WARM_KB=2048" "kb4096 MOE_STAGE2_WARM_KB=4096"
  "kb8192 MOE_STAGE2_WARM_KB=8192" "l4096 MOE_STAGE2_WARM_KB=4096 MOE_SHARED_WARM_KIND=2")
for round in 1 2; do
  for c in "${cfgs[@]}"; do
    [ "$(cap 40 120)" -lt 40 ] && break 2
    # shellcheck disable=SC2086
    (export ${c#* } && op_rows "r$round ${c%% *}" $M --shapes qwen3-30b-a3b --formats fp8_block --M 1,2,4,8 &&
      op_rows "r$round ${c%% *}" $M --shapes qwen3-30b-a3b --formats bf16 --M 1,8 &&
      op_rows "r$round ${c%% *}" $M --shapes deepseek-v3 --formats fp8_block --M 1,8 --copies 3 &&
      op_rows "r$round ${c%% *}" $M --shapes deepseek-v3-tp8,qwen3-next-80b-a3b --formats fp8_block --M 1,8) \
      >> $R/stage2-warm-ab.log
  done
  pack
  echo "round $round t=$(el)"
done
awk '{print $1, $2, $3, $4, $5, $6}' $R/stage2-warm-ab.log | sort -k3,3 -k4,4 -k5,5n -k2,2 -k1,1 |
  awk '{k=$3" "$4" "$5; if (k!=last) {printf "\n%s %s M=%s:", $3, $4, $5; last=k} printf " %s/%s %s", $1, $2, $6}'
echo
for round in 1 2; do
  for kb in 0 4096 8192; do
    [ "$(cap 30 0)" -lt 30 ] && break 2
    MOE_STAGE2_WARM_KB=$kb timeout 40 $M bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 \
      --prefill 0 2>&1 | grep -E "^ *decode|rror" | sed "s/^/r$round kb=$kb /" | tee -a $R/stage2-warm-decode.log
  done
done
pack
echo "done t=$(el)"
