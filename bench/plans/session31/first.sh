#!/usr/bin/env bash
# Session 31, first call. Carry: .carry/s31a-gpu.tar.xz (branch next/s31-warm: MOE_L2_WARM, NOT RUN ON A GPU
# yet: a side-stream kernel requests the next dense GEMVs' weights into L2 beside the MoE stages, which leave
# about half of DRAM's bandwidth unused; MOE_READ_BW_PREFETCH=1 measures the read bandwidth with the 256-byte
# prefetch).
#  1. cuda_model_test with the warm on (bulk and evict-last lines, every part);
#  2. the model's decode step (random Qwen3-30B-A3B fp8, batches 1 and 8) for each setting, two rounds
#     alternated, and the read bandwidth with the prefetch once;
#  3. step stamps with the warm off and on.
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s31a-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
M=/tmp/n/bin/moe
for kind in 1 3; do
  MOE_L2_WARM=$kind MOE_L2_WARM_PARTS=7 timeout 60 /tmp/n/bin/cuda_model_test --gtest_color=no > $R/model-test-warm$kind.log 2>&1
  echo "cuda_model_test warm=$kind rc $? t=$(el)"
  grep -E "^\[  FAILED|^\[  PASSED" $R/model-test-warm$kind.log | head -5
done
pack
run_cfg() {
  local label=$1
  shift
  env "$@" timeout 45 $M bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 --prefill 0 2>&1 |
    grep -E "^ *decode|read bandwidth|rror" | sed "s|^|$label |" | tee -a $R/decode-ab.log
}
cfgs=("off MOE_L2_WARM=0" "b-p1 MOE_L2_WARM=1 MOE_L2_WARM_PARTS=1" "b-p3 MOE_L2_WARM=1 MOE_L2_WARM_PARTS=3"
  "b-p7 MOE_L2_WARM=1 MOE_L2_WARM_PARTS=7" "l-p7 MOE_L2_WARM=2 MOE_L2_WARM_PARTS=7"
  "ll-p7 MOE_L2_WARM=3 MOE_L2_WARM_PARTS=7" "b-p7-32 MOE_L2_WARM=1 MOE_L2_WARM_PARTS=7 MOE_L2_WARM_BLOCKS=32"
  "l-p7-64 MOE_L2_WARM=2 MOE_L2_WARM_PARTS=7 MOE_L2_WARM_BLOCKS=64")
for round in 1 2; do
  for c in "${cfgs[@]}"; do
    [ "$(cap 60 0)" -lt 60 ] && break 2
    # shellcheck disable=SC2086
    run_cfg "r$round ${c%% *}" ${c#* }
  done
  pack
  echo "round $round t=$(el)"
done
[ "$(cap 60 0)" -ge 60 ] && run_cfg "bw-prefetch" MOE_L2_WARM=0 MOE_READ_BW_PREFETCH=1
for c in "off MOE_L2_WARM=0" "b-p7 MOE_L2_WARM=1 MOE_L2_WARM_PARTS=7"; do
  [ "$(cap 60 0)" -lt 60 ] && break
  # shellcheck disable=SC2086
  env MOE_STEP_STAMPS=1 ${c#* } timeout 45 $M bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1 \
    --prefill 0 > "$R/stamps-${c%% *}.log" 2>&1
  echo "stamps $c rc $?"
  grep -E "us each|^ *decode" "$R/stamps-${c%% *}.log" | head -14
done
pack
echo "done t=$(el)"
