#!/usr/bin/env bash
# Session 29, sixth call: gpu-check of main as landed (carry .carry/s29g-gpu.tar.xz, main at 3d5a597: 1102373's
# kernels with the grouping's three launches from 129 tokens as before), on an H200 if one comes.
set -uo pipefail
export END=${END:-400}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s29g-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin 5
pack
echo "done t=$(el)"
