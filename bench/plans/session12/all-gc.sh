#!/usr/bin/env bash
# The next GPU session's first call: scripts/gpu-check on branch next/all13 (see NEXT.md for its commit: next/all
# rebased on main 735c867 + decode GEMV round trips + review fixes + the MoE combine in the next GEMV + attention
# combine round trips): every GPU test with poisoned memory, the CUDA case checks, the benchmarks and the torch
# peer, comparable with 65d6362's run; then next/all13's Auto against main's in the same lease (op and model),
# the combine in the norm on/off, then path thresholds while time is left. Every step's timeout comes from the
# time left, so the call ends (and packs what it has, after each step) before the 600 s limit.
# Carry: .carry/first12.tar.xz (lib/, main/moe) .carry/all13-gpu.tar.xz (bin/ + lib/ of next/all13) .carry/all-gc.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=570  # seconds: the last step must be over by then
cap() { local left=$(( END - $(el) - ${2:-0} )); [ $left -lt $1 ] && echo $left || echo $1; }  # min(cap, left - reserve)
pack() { tar -C /tmp -czf $OUT/gc.tgz --exclude=gc/cases --exclude=gc/fixtures gc 2>/dev/null; }
mkdir -p /tmp/c /tmp/all /tmp/gc && tar -C /tmp/c -xJf .carry/first12.tar.xz && tar -C /tmp/all -xJf ${ALL_ARCHIVE:-.carry/all13-gpu.tar.xz}
echo "unpacked t=$(el)"
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/all/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
# gpu-check keeps 200 s for the A/Bs after it.
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/all/bin OUT=/tmp/gc timeout $(cap 330 200) scripts/gpu-check > /tmp/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"; grep -E "^\[  FAILED|differ|not the first" /tmp/gc/gpu-tests.log | head -20; tail -30 /tmp/gc/gc.log; pack
if [ $(cap 999 40) -gt 60 ]; then
  AB_M=1,64,256,4096 AB_SHAPES=qwen3-30b-a3b,deepseek-v3-tp8 AB_FORMATS=fp8_block AB_MODEL=1 timeout $(cap 210 60) \
    scripts/ab-moe-bench /tmp/c/main/moe /tmp/all/bin/moe 1 > /tmp/gc/ab-main.log 2>&1; echo "ab t=$(el)"; tail -10 /tmp/gc/ab-main.log; pack
fi
# The MoE combine inside the next q/k/v GEMV (next/combine-in-norm) against the combine kernel, same binary.
if [ $(cap 999) -gt 50 ]; then
  printf '#!/bin/sh\nMOE_COMBINE_IN_NORM=0 exec /tmp/all/bin/moe "$@"\n' > /tmp/all/nocomb; chmod +x /tmp/all/nocomb
  AB_M=1 AB_SHAPES=qwen3-30b-a3b AB_FORMATS=fp8_block AB_MODEL=1 timeout $(cap 120) \
    scripts/ab-moe-bench /tmp/all/nocomb /tmp/all/bin/moe 1 > /tmp/gc/ab-nocomb.log 2>&1; echo "nocomb t=$(el)"; tail -4 /tmp/gc/ab-nocomb.log; pack
fi
if [ $(cap 999) -gt 90 ]; then
  PT_SHAPES=qwen3-30b-a3b,deepseek-v3-tp8 PT_FORMATS=fp8_block PT_M=1,4,8,16,64,128,256,512 PT_PATHS=mma,swap-ab \
    timeout $(cap 999) scripts/path-thresholds /tmp/all/bin/moe > /tmp/gc/thresholds.log 2>&1; echo "thresholds t=$(el)"
  grep -v "^path-thr" /tmp/gc/thresholds.log; pack
fi
echo "done t=$(el)"
