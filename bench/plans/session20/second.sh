#!/usr/bin/env bash
# Session 20, second call: decode attention's splits combined in a thread block cluster through distributed
# shared memory (MOE_ATTENTION_CLUSTER, on by default for 2..8 splits) and the new token's inputs read before
# the wait. The attention GPU tests (both combines), the model's decode step with the cluster on and off
# (alternated), the measuring build's timeline with its marks, then gpu-check at this commit.
# Carry: .carry/s20b-gpu.tar.xz (scripts/pack-gpu-carry build), .carry/measuring20b.tar.xz.
set -uo pipefail
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
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
