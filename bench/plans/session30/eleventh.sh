#!/usr/bin/env bash
# Session 30, eleventh call. Carry: .carry/s30w-gpu.tar.xz (branch next/s30-swap256 at b4ed950: the grouped GEMMs
# cp.async weight copies with the 256-byte prefetch, bf16 faster in the tenth call's A/B). gpu-check of it before
# it lands (its GPU tests, the CUDA case checks, the fixtures, the benchmarks with the peer).
set -uo pipefail
export END=${END:-585}
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s30w-gpu.tar.xz /tmp/n
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
quick_gpu_check /tmp/n/bin 5
grep -E "^deepseek-v3 " $R/gc/bench.log | head -2
pack
echo "done t=$(el)"
