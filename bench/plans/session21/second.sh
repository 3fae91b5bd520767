#!/usr/bin/env bash
# Session 21, second call: tensor parallelism through the CLI at TP 1/2/4/8 on one GPU (scripts/tp-gpu-check,
# ~5 minutes), which sessions 19 and 20 skipped; session 20 changed decode attention (its cluster combine runs
# at every TP degree). Carry: .carry/s21-gpu.tar.xz.
set -uo pipefail
source bench/plans/lib/gpu-env.sh
unpack_carry .carry/s21-gpu.tar.xz /tmp/n
record_gpu $R/gpu.txt
timeout "$(cap 450 10)" python3 scripts/tp-gpu-check /tmp/n/bin/moe $R/tp > $R/tp.log 2>&1
echo "tp-gpu-check rc $? t=$(el)"
tail -25 $R/tp.log
pack
