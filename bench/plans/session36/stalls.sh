#!/usr/bin/env bash
# Session 36's last, short plan: where Auto's one-token swap-AB stages stall with the caches kept
# (NCU_CACHE_CONTROL=none) against ncu's default flush (all): the icache probe found first-time code costs an
# idle SM 40-60 ns per KB and costs nothing beside a weight stream, and stage 2's code after its wait runs
# on SMs that stage 1 has left. Carry: .carry/gpu.tar.xz (main's binaries).
set -uo pipefail
export END=${END:-140}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/gpu.tar.xz /tmp/carry
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
one_token_stalls /tmp/carry/bin/moe 0 "21 none" "21 all" "20 none"
echo "done t=$(el)"
