#!/usr/bin/env bash
# Session 20, fourth call: attention's cluster combine by pushes to the heads' owners (ce52299) against the
# pull form: the attention tests, the model's decode step against the
# previous binary (33f01a7, old20b), alternated; the measuring build's timeline; then gpu-check at ce52299.
# Carry: .carry/s20d-gpu.tar.xz, .carry/measuring20d.tar.xz, .carry/old20b-moe.tar.xz.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-470}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/r.tgz --exclude=r/gc/cases --exclude=r/gc/fixtures r 2>/dev/null; }
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s20d-gpu.tar.xz /tmp/n
mkdir -p /tmp/m /tmp/o && tar -C /tmp/m -xJf .carry/measuring20d.tar.xz && tar -C /tmp/o -xJf .carry/old20b-moe.tar.xz
record_gpu $R/gpu.txt
timeout 150 /tmp/n/bin/cuda_model_test --gtest_color=no --gtest_filter='*attention*:*Compact*' \
  > $R/tests.log 2>&1
echo "tests rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|FAILED|^\[       OK \].*Compact" $R/tests.log | head -12
for run in new old new old new old; do
  bin=/tmp/n/bin/moe; [ $run = old ] && bin=/tmp/o/bin/moe
  timeout 40 $bin bench --random-shape qwen3-30b-a3b --format fp8_block --batches 1,8 --prefill 0 2>&1 \
    | grep -E "^ *decode|rror" | sed "s/^/$run /"
done > $R/ab.log
echo "t=$(el)"; cat $R/ab.log
pack
timeline /tmp/m/bin/moe $R/timeline.log
pack
mkdir -p $R/gc
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/n/bin OUT=$R/gc timeout $(cap 330 5) scripts/gpu-check \
  > $R/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"
grep -E "^\[  FAILED" $R/gc/gpu-tests.log | head
sed -n '/== summary/,/moe bench/p' $R/gc/gc.log | head -9
grep -E "fp8_block M=(1|8|64|4096) .*auto|deepseek-v3 .*M=1 " $R/gc/gc.log | head -8
grep -E "^ *(decode|prefill)" $R/gc/model-bench.log | head -5
pack
echo "done t=$(el)"
