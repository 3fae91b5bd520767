#!/usr/bin/env bash
# Session 30, eighth call. Carry: .carry/s30f-gpu.tar.xz (branch next/s30-l2pf at 1bfdf09: the expert
# weights' loads with L2's 256-byte prefetch size, faster in the seventh call's A/B). gpu-check of it before
# it lands (its GPU tests, the CUDA case checks, the fixtures, the benchmarks with the peer).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30f-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin 5
grep -E "^deepseek-v3 " $R/gc/bench.log | head -2
pack
echo "done t=$(el)"
