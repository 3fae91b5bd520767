#!/usr/bin/env bash
# Session 19, first call: the attention race fix (dc5e4aa) under racecheck; gpu-check at main + the grouped
# GEMM's fp8 steps in halves (MOE_WGMMA_HALVES, off by default; its forced-path rows must give the whole-step
# kernel's bits); the halves A/B on the MoE op; the compact GEMV A/B in the decode step.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-560}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/r.tgz --exclude=r/gc/cases --exclude=r/gc/fixtures --exclude='*.ncu-rep' r 2>/dev/null; }
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s19-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 100 $CS --tool racecheck --print-limit 20 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
  --format fp8_block --layers 2 --batches 1,8 --context 1024 --prefill 0 --reps 1 > $R/racecheck.log 2>&1
echo "racecheck rc $? t=$(el)"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|Race reported|hazard" $R/racecheck.log | head -8
pack
mkdir -p $R/gc
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/n/bin OUT=$R/gc timeout $(cap 300 120) scripts/gpu-check \
  > $R/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"
grep -E "^\[  FAILED|halves" $R/gc/gpu-tests.log | head -16
sed -n '/== summary/,$p' $R/gc/gc.log | head -30
pack
SH=qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8
for run in h0 h1 h0 h1; do
  [ $(cap 999 30) -gt 25 ] || break
  MOE_WGMMA_HALVES=${run:1:1} timeout $(cap 45 30) /tmp/n/bin/moe bench --shapes $SH --formats fp8_block \
    --M 256,1024,4096 --paths auto 2>&1 | grep -E "^(deepseek|qwen)" | sed "s/^/$run /"
  echo "$run t=$(el)" >&2
done > $R/halves.log
cat $R/halves.log
pack
for run in c0 c1 c0 c1; do
  [ $(cap 999) -gt 20 ] || break
  MOE_GEMV_COMPACT=${run:1:1} timeout $(cap 30) /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1 --prefill 0 2>&1 | grep -E "^decode" | sed "s/^/$run /"
done > $R/compact.log
cat $R/compact.log
pack
echo "done t=$(el)"
