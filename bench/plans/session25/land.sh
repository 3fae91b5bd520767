#!/usr/bin/env bash
# Session 25: the changes that measured faster than main on the H100 (bisect.sh, first round: main with the
# parameters read before the wait and the router kind compiled in 2.659 / 2.665 ms against 2.702 / 2.702;
# the one-warp grouping removed 2.683 / 2.674), together on branch next/land25: the decode step against
# main's binary, then gpu-check (quick form) before it lands.
# Carry: .carry/land25-gpu.tar.xz (scripts/pack-gpu-carry build at next/land25), .carry/s24-main-moe.tar.xz.
set -uo pipefail
export END=585
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/land25-gpu.tar.xz /tmp/n
mkdir -p /tmp/o && tar -C /tmp/o -xJf .carry/s24-main-moe.tar.xz
record_gpu $R/gpu.txt
binaries_ab $R/land-ab.log /tmp/n/bin/moe /tmp/o/bin/moe 1
pack
# The tests, the case checks and the fixtures without the benchmarks (GPU_CHECK_QUICK): what fits the
# device time left; the A/B above is the speed.
mkdir -p $R/gc
GPU_CHECK_QUICK=1 GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/n/bin OUT=$R/gc \
  timeout "$(cap 400 5)" scripts/gpu-check > $R/gc/gc.log 2>&1
echo "gpu-check (quick, no benchmarks) rc $? t=$(el)"
grep -E "^\[  FAILED" $R/gc/gpu-tests.log | head
sed -n '/== summary/,$p' $R/gc/gc.log | head -12
pack
echo "done t=$(el)"
