#!/usr/bin/env bash
# The second GPU call after sessions 17 and 18 (neither had a GPU): the two swap-AB switches against their off
# state, the same binary, alternated. Ends by END (about 9.5 minutes).
# 1. The L2 requests ahead (MOE_SWAP_AB_L2_AHEAD=D, session 18, untimed) at D = 0, 2, 0, 2 on the swap-AB decode
#    calls (DeepSeek-V3 full layer: 156 us at M=1, floor 86, streaming at ~2.5 TB/s; Qwen3-30B-A3B: M=8 at 1.7x
#    its floor), then D = 1 and 3 once if time is left; then the model's decode step at D = 0 and 2 (batch 1, 8).
#    Default the best D if DeepSeek-V3 M=1 or Qwen3-30B-A3B M=8 drops and no row rises by more than 1 %. Off,
#    the one-column-tile kernels carry a uniform branch per K step: compare D=0 with first.sh's gpu-check
#    bench.log (same lease or not: say which) for the cost of having it compiled in.
# 2. The counter boundaries (MOE_COUNTER_WAITS=1, session 18, untimed: stage 1 -> stage 2 -> combine by
#    release/acquire counters instead of the programmatic wait) against the wait, on the fp8 decode calls
#    without a shared expert (Qwen3-30B-A3B, Qwen3-235B-A22B TP8 at M = 1, 2, 4, 8), then the model at batch 1
#    and 8. Read beside gpu-check's boundaries.log (first.sh): if the bench shows the counter well under the
#    PDL wait and this saves ~2 x that per call, the model's other boundaries are next.
# 3. fp8 stage 2 reading its first pass's pairs before its wait (MOE_SWAP_AB_FP8_PAIRS_EARLY=1, session 18,
#    untimed: one dependent round trip fewer after the wait) against after: Qwen3-30B-A3B and DeepSeek-V3 TP8 at
#    M = 1, 8, 64.
# 4. The joint wave of the shared and routed swap-AB launches (MOE_SWAP_AB_JOINT_WAVE=1, session 17, untimed)
#    against apart: DeepSeek-V3 and Qwen3-Next at M = 1, 4, 8. Default it if DeepSeek-V3 M=1 drops and nothing
#    rises.
# 5. The model with every decode switch on against all off. (Whatever the time left does not fit is skipped:
#    the cap() guards.)
# (The decode timelines and the ncu profiles are third.sh's.)
# Carry: .carry/s18-gpu.tar.xz (main, scripts/pack-gpu-carry), .carry/second18.sh
# Run:   END=580 bash .carry/second18.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-580}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r2; mkdir -p $R /tmp/n
pack() { tar -C /tmp -czf $OUT/r2.tgz r2 2>/dev/null; }
tar -C /tmp/n -xJf .carry/s18-gpu.tar.xz
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/n/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/gpu.txt
table() { awk '{k=$2" "$4; v[k]=v[k]" "$1"="$5} END{for(k in v) print k, v[k]}' "$1" | sort -k1,1 -k2,2n; }
# op_ab VAR RESERVE LIMIT "RUNS" BENCH-ARGS...: `moe bench` with VAR set to each run's digit (d2: VAR=2), in
# order, while RESERVE seconds stay for what follows; rows prefixed with the run's name.
op_ab() {
  local var=$1 reserve=$2 limit=$3 runs=$4
  shift 4
  for run in $runs; do
    [ $(cap 999 $reserve) -gt 30 ] || break
    env $var=${run:1:1} timeout $(cap $limit $reserve) /tmp/n/bin/moe bench "$@" 2>&1 |
      grep -E "^(deepseek|qwen|decode)" | sed "s/^/$run /"
    echo "$run t=$(el)" >&2
  done
}

# 1. L2 requests ahead: the MoE op, then the model.
op_ab MOE_SWAP_AB_L2_AHEAD 330 60 "d0 d2 d0 d2 d1 d3" --shapes deepseek-v3,qwen3-30b-a3b --formats fp8_block \
  --M 1,2,4,8 --paths auto > $R/l2ahead.log
table $R/l2ahead.log
op_ab MOE_SWAP_AB_L2_AHEAD 290 45 "d0 d2" --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 \
  --prefill 0 > $R/l2ahead-model.log
cat $R/l2ahead-model.log
pack

# 2. Counter boundaries.
op_ab MOE_COUNTER_WAITS 220 40 "c0 c1 c0 c1" --shapes qwen3-30b-a3b,qwen3-235b-a22b-tp8 --formats fp8_block \
  --M 1,2,4,8 --paths auto > $R/counters.log
table $R/counters.log
op_ab MOE_COUNTER_WAITS 190 45 "c0 c1" --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 \
  --prefill 0 > $R/counters-model.log
cat $R/counters-model.log
pack

# 3. fp8 stage 2's pairs before its wait.
op_ab MOE_SWAP_AB_FP8_PAIRS_EARLY 70 40 "p0 p1 p0 p1" --shapes qwen3-30b-a3b,deepseek-v3-tp8 --formats fp8_block \
  --M 1,8,64 --paths auto > $R/pairs-early.log
table $R/pairs-early.log
pack

# 4. The joint wave.
op_ab MOE_SWAP_AB_JOINT_WAVE 0 60 "j0 j1 j0 j1" --shapes deepseek-v3,qwen3-next-80b-a3b --formats fp8_block \
  --M 1,4,8 --paths auto > $R/joint.log
table $R/joint.log
pack

# 5. If time is left: the model with every decode switch on against all off, batch 1 and 8.
ALL="MOE_GEMV_COMPACT=1 MOE_SWAP_AB_L2_AHEAD=2 MOE_COUNTER_WAITS=1 MOE_SWAP_AB_FP8_PAIRS_EARLY=1"
for run in off on off on; do
  [ $(cap 999) -gt 40 ] || break
  # shellcheck disable=SC2086 # ALL is a list of NAME=VALUE words
  env $([ $run = on ] && echo $ALL) timeout $(cap 45) /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1,8 --prefill 0 2>&1 | grep -E "^decode" | sed "s/^/$run /"
done > $R/all-switches-model.log
cat $R/all-switches-model.log
echo "done t=$(el)"; pack
