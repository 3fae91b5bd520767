#!/usr/bin/env bash
# Session 20, fifth call (the last ~3 minutes of device time): the kernel timeline with marks in every decode
# kernel (the measuring build at main), batch 1 and batch 8. Carry: .carry/marks20.tar.xz (bin/moe of
# scripts/build-measuring MOE_KERNEL_TIMELINE and lib/ of scripts/pack-gpu-carry).
set -uo pipefail
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/marks20.tar.xz /tmp/n
record_gpu $R/gpu.txt
timeline /tmp/n/bin/moe $R/timeline-b1.log
pack
MOE_KERNEL_TIMELINE=1 timeout 45 /tmp/n/bin/moe bench --random-shape qwen3-30b-a3b --format fp8_block \
  --batches 8 --prefill 0 > $R/timeline-b8.log 2>&1
grep -A24 -iE "^  launch" $R/timeline-b8.log | head -28
pack
echo "done t=$(el)"
