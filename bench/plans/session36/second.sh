#!/usr/bin/env bash
# Session 36's second plan: the quick gpu-check owed since session 34 (main's kernels after session 35's
# removals and knob reads, never run on a GPU), on the H200 the targets are for. Carry:
# .carry/gpu.tar.xz (scripts/pack-gpu-carry at main's commit).
set -uo pipefail
export END=${END:-560}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/gpu.tar.xz /tmp/carry
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
quick_gpu_check /tmp/carry/bin 5
pack
echo "done t=$(el)"
