#!/usr/bin/env bash
# Session 46's last call (carry .carry/s46b.tar.xz, main with Auto's Qwen3-Next bf16 threshold at 16 tokens):
# the quick gpu-check (the GPU tests' Qwen3-Next bf16 rows at 16 and 31 tokens now on the grouped GEMM), then
# Auto against both forced paths for Qwen3-Next bf16 at 8-48 tokens.
set -uo pipefail
export END=${END:-300}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s46b.tar.xz}" || exit 1
(while sleep 15; do pack; done) &
packer=$!
quick_gpu_check $B 50
PT_PATHS=mma,swap-ab path_thresholds $B/moe qwen3-next-80b-a3b bf16 8,12,16,24,32,48 5
kill $packer
pack
echo "done t=$(el)"
