#!/usr/bin/env bash
# Session 19, the one call (device time was short after failed starts): gpu-check at main, with the grouped
# GEMM's fp8 steps in halves (MOE_WGMMA_HALVES, off by default; its forced-path rows must give the
# whole-step kernel's bits); the halves A/B on the MoE op; the compact GEMV in a fresh measuring build
# (session 17's stopped with cudaErrorIllegalInstruction); the attention race fix (dc5e4aa) under racecheck.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-560}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/r.tgz --exclude=r/gc/cases --exclude=r/gc/fixtures --exclude='*.ncu-rep' r 2>/dev/null; }
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s19-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring19.tar.xz
record_gpu $R/gpu.txt
mkdir -p $R/gc
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/n/bin OUT=$R/gc timeout $(cap 280 150) scripts/gpu-check \
  > $R/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"
grep -E "^\[  FAILED|halves" $R/gc/gpu-tests.log | grep -E "FAILED|M=400 |vs fp32" | head -16
sed -n '/== summary/,$p' $R/gc/gc.log | head -30
pack
SH=qwen3-30b-a3b,deepseek-v3-tp8,qwen3-235b-a22b-tp8
for run in h0 h1 h0 h1; do
  [ $(cap 999 60) -gt 25 ] || break
  MOE_WGMMA_HALVES=${run:1:1} timeout $(cap 45 60) /tmp/n/bin/moe bench --shapes $SH --formats fp8_block \
    --M 256,1024,4096 --paths auto 2>&1 | grep -E "^(deepseek|qwen)" | sed "s/^/$run /"
  echo "$run t=$(el)" >&2
done > $R/halves.log
cat $R/halves.log
pack
MOE_KERNEL_TIMELINE=1 MOE_GEMV_COMPACT=1 timeout $(cap 40 20) /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b \
  --format fp8_block --batches 1 --prefill 0 > $R/timeline-compact1.log 2>&1
echo "measuring timeline compact=1 rc $? t=$(el)"; grep -iE "error|illegal" $R/timeline-compact1.log | head -3
grep -A12 -i "launch" $R/timeline-compact1.log | head -14
pack
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout $(cap 90) $CS --tool racecheck --print-limit 20 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
  --format fp8_block --layers 2 --batches 1 --context 1024 --prefill 0 --reps 1 > $R/racecheck.log 2>&1
echo "racecheck rc $? t=$(el)"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|Race reported|hazard" $R/racecheck.log | head -8
pack
echo "done t=$(el)"
