#!/usr/bin/env bash
# Session 47's last ~60 s: the op's launches per call (prologue, grouping, both GEMMs, combine) from the
# MOE_KERNEL_TIMELINE build (carry .carry/s47-timeline2.tar.xz: bin/moe-timeline at 099da70's host code; its
# kernels hold bd09747's stage-1 take, which at its default touches only unequal runs, not Qwen3-30B-A3B),
# to split the ~21 us a call spends outside the two GEMMs.
set -uo pipefail
mkdir -p /tmp/t "$OUT/r" && tar -C /tmp/t -xJf "${TIMELINE:-.carry/s47-timeline2.tar.xz}" || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/r/gpu.txt"
MOE_KERNEL_TIMELINE=1 timeout 70 /tmp/t/bin/moe-timeline bench --shapes qwen3-30b-a3b --formats fp8_block \
  --M 16,64,256 > "$OUT/r/op-timeline.log" 2>&1
echo "rc $?"
grep -vE "^moe" "$OUT/r/op-timeline.log" | head -60
