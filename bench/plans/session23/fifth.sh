#!/usr/bin/env bash
# Session 23, fifth call (the last ~370 s of device time): gpu-check at the final state (the fourth call's
# batched quantisation reverted: it measured slower at batch 1, so the kernels are the third call's 3140bd0
# again, with the fourth call's host side). Carry: .carry/s23-gpu5.tar.xz (scripts/pack-gpu-carry build).
set -uo pipefail
export END=250
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s23-gpu5.tar.xz /tmp/n
record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
