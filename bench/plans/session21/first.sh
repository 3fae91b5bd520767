#!/usr/bin/env bash
# Session 21, first call: the kernel timeline with every decode kernel's marks at batch 1 and 8 (session 20's
# fifth call, which found no device time), then gpu-check at main without the TP CLI (its H200 figures, if an
# H200 comes). Carry: .carry/s21-gpu.tar.xz (scripts/pack-gpu-carry build) and .carry/measuring21.tar.xz
# (bin/moe of scripts/build-measuring MOE_KERNEL_TIMELINE, packed with tar -cJ).
set -uo pipefail
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s21-gpu.tar.xz /tmp/n
mkdir -p /tmp/m && tar -C /tmp/m -xJf .carry/measuring21.tar.xz
record_gpu $R/gpu.txt
timeline /tmp/m/bin/moe $R/timeline-b1.log
MOE_KERNEL_TIMELINE=1 timeout 45 /tmp/m/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block \
  --batches 8 --prefill 0 > $R/timeline-b8.log 2>&1
grep -A24 -iE "^  launch" $R/timeline-b8.log | head -28
pack
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
