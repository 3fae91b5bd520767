#!/usr/bin/env bash
# Session 20, first call: the compact GEMV without its L2 cache hint (770dd9d; session 19's third call never ran):
# its same-bits test, the model's decode step with it on and off (alternated), the measuring build's kernel
# timeline (with the new marks) with it off and on; then gpu-check at main (6e971e9) without the TP CLI and the experiments.
# Carry: .carry/s20-gpu.tar.xz (scripts/pack-gpu-carry build), .carry/measuring20.tar.xz (bin/moe of
# scripts/build-measuring MOE_KERNEL_TIMELINE), this script.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-565}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/r.tgz --exclude=r/gc/cases --exclude=r/gc/fixtures r 2>/dev/null; }
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s20-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring20.tar.xz
record_gpu $R/gpu.txt
timeout 60 /tmp/n/bin/cuda_model_test --gtest_color=no --gtest_filter='*Compact*' > $R/compact-test.log 2>&1
echo "compact test rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|OK \]" $R/compact-test.log | head
for run in c1 c0 c1 c0; do
  MOE_GEMV_COMPACT=${run:1:1} timeout 40 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1,8 --prefill 0 2>&1 | grep -E "^ *decode" | sed "s/^/$run /"
done > $R/compact.log
echo "t=$(el)"; cat $R/compact.log
pack
for c in 0 1; do
  MOE_KERNEL_TIMELINE=1 MOE_GEMV_COMPACT=$c timeout 45 /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b \
    --format fp8_block --batches 1 --prefill 0 > $R/timeline-compact$c.log 2>&1
  echo "measuring timeline compact=$c rc $? t=$(el)"; grep -iE "error|illegal" $R/timeline-compact$c.log | head -3
  grep -A16 -iE "^  launch" $R/timeline-compact$c.log | head -20
  pack
done
# One split per KV head (its 512 keys in one block): what the splits' combine costs against the longer key loop.
MOE_KERNEL_TIMELINE=1 MOE_ATTENTION_SPLIT_KEYS=4096 timeout 45 /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b \
  --format fp8_block --batches 1 --prefill 0 > $R/timeline-split1.log 2>&1
echo "measuring timeline one split rc $? t=$(el)"; grep -A16 -iE "^  launch" $R/timeline-split1.log | head -20
pack
mkdir -p $R/gc
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/n/bin OUT=$R/gc timeout $(cap 330 5) scripts/gpu-check \
  > $R/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"
grep -E "^\[  FAILED" $R/gc/gpu-tests.log | head
sed -n '/== summary/,$p' $R/gc/gc.log | head -40
pack
echo "done t=$(el)"
