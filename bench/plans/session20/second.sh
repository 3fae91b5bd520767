#!/usr/bin/env bash
# Session 20, second call: decode attention's splits combined in a thread block cluster through distributed
# shared memory (MOE_ATTENTION_CLUSTER, on by default for 2..8 splits) and the new token's inputs read before
# the wait. The attention GPU tests (both combines), the model's decode step with the cluster on and off
# (alternated), the measuring build's timeline with its marks, then gpu-check at this commit.
# Carry: .carry/s20b-gpu.tar.xz (scripts/pack-gpu-carry build), .carry/measuring20b.tar.xz.
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=${END:-470}
cap() { local l=$(( END - $(el) - ${2:-0} )); [ $l -lt $1 ] && echo $l || echo $1; }
R=/tmp/r; mkdir -p $R
pack() { tar -C /tmp -czf $OUT/r.tgz --exclude=r/gc/cases --exclude=r/gc/fixtures r 2>/dev/null; }
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s20b-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring20b.tar.xz
record_gpu $R/gpu.txt
timeout 120 /tmp/n/bin/cuda_model_test --gtest_color=no --gtest_filter='*attention*:*Compact*' > $R/attention-tests.log 2>&1
echo "attention tests rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|FAILED|decode rows" $R/attention-tests.log | head -24
decode_ab /tmp/n/bin/moe $R/cluster.log MOE_ATTENTION_CLUSTER 1 0 1 0
echo "t=$(el)"
pack
for k in 1 0; do timeline /tmp/m/bin/moe $R/timeline-cluster$k.log MOE_ATTENTION_CLUSTER=$k; pack; done
echo "t=$(el)"
mkdir -p $R/gc
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/n/bin OUT=$R/gc timeout $(cap 330 5) scripts/gpu-check \
  > $R/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"
grep -E "^\[  FAILED" $R/gc/gpu-tests.log | head
sed -n '/== summary/,/moe bench/p' $R/gc/gc.log | head -12
grep -E "M=1 |M=8 |M=4096" $R/gc/gc.log | head -12
grep -E "^ *(decode|prefill)" $R/gc/gc.log | head -8
pack
echo "done t=$(el)"
