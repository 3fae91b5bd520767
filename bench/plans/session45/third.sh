#!/usr/bin/env bash
# Session 45's last call, whatever card comes, with little device time left (carry .carry/s45b.tar.xz, main's
# build at b1b1462): the quick gpu-check of Auto's new threshold, its results packed every 15 s so a call cut
# short still brings back what ran; then Qwen3-30B-A3B's path crossover on this card.
set -uo pipefail
export END=${END:-400}
source bench/plans/lib/gpu-env.sh
start_plan "${CARRY:-.carry/s45b.tar.xz}" || exit 1
pack_every 15
quick_gpu_check $B 5
PT_PATHS=mma,swap-ab path_thresholds $B/moe qwen3-30b-a3b,qwen3-235b-a22b-tp8 fp8_block,bf16 2,4,8,16,24,32,48 5
stop_packing
echo "done t=$(el)"
