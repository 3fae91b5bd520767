#!/usr/bin/env bash
# Session 20, first call: the compact GEMV without its L2 cache hint (770dd9d; session 19's third call never ran):
# its same-bits test, the model's decode step with it on and off (alternated), the measuring build's kernel
# timeline (with the new marks) with it off and on; then gpu-check at main (6e971e9) without the TP CLI and the experiments.
# Carry: .carry/s20-gpu.tar.xz (scripts/pack-gpu-carry build), .carry/measuring20.tar.xz (bin/moe of
# scripts/build-measuring MOE_KERNEL_TIMELINE), this script.
set -uo pipefail
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s20-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring20.tar.xz
record_gpu $R/gpu.txt
timeout 60 /tmp/n/bin/cuda_model_test --gtest_color=no --gtest_filter='*Compact*' > $R/compact-test.log 2>&1
echo "compact test rc $? t=$(el)"; grep -E "^\[  (PASSED|FAILED)|OK \]" $R/compact-test.log | head
decode_ab /tmp/n/bin/moe $R/compact.log MOE_GEMV_COMPACT 1 0 1 0
pack
for c in 0 1; do timeline /tmp/m/bin/moe $R/timeline-compact$c.log MOE_GEMV_COMPACT=$c; pack; done
# One split per KV head (its 512 keys in one block): what the splits' combine costs against the longer key loop.
timeline /tmp/m/bin/moe $R/timeline-split1.log MOE_ATTENTION_SPLIT_KEYS=4096
pack
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
