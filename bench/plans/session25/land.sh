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
quick_gpu_check /tmp/n/bin
pack
echo "done t=$(el)"
