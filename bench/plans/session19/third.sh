#!/usr/bin/env bash
# Session 19, third call: the compact GEMV without its L2 cache hint (ptxas 13.0 lost the policy register in the
# measuring build: cudaErrorIllegalInstruction). Its same-bits test, the model's decode step with it on and off
# (alternated), and the measuring build's kernel timeline with it on and off.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
R=/tmp/r3; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/r3.tgz r3 2>/dev/null; }
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s19-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring19.tar.xz
record_gpu $R/gpu.txt
timeout 60 /tmp/n/bin/cuda_model_test --gtest_color=no --gtest_filter='*Compact*' > $R/compact-test.log 2>&1
echo "compact test rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|OK \]" $R/compact-test.log | head
for run in c1 c0 c1; do
  MOE_GEMV_COMPACT=${run:1:1} timeout 40 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1 --prefill 0 2>&1 | grep -E "^decode" | sed "s/^/$run /"
done > $R/compact.log
echo "t=$(el)"; cat $R/compact.log
pack
for c in 1; do
  MOE_KERNEL_TIMELINE=1 MOE_GEMV_COMPACT=$c timeout 45 /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1 --prefill 0 > $R/timeline-compact$c.log 2>&1
  echo "measuring timeline compact=$c rc $? t=$(el)"; grep -iE "error|illegal" $R/timeline-compact$c.log | head -3
  grep -A12 -iE "^launch|blocks" $R/timeline-compact$c.log | head -14
done
pack
echo "done t=$(el)"
