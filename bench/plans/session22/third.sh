#!/usr/bin/env bash
# Session 22, third call: gpu-check at the branch's final state (the one-warp grouping off by default after the
# second call measured it slower; the router prologue on). Carry: .carry/s22-gpu3.tar.xz (scripts/pack-gpu-carry
# build).
set -uo pipefail
export END=300 # a short call: the session's device time is nearly spent
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s22-gpu3.tar.xz /tmp/n
record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
