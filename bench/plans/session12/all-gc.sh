#!/usr/bin/env bash
# Session 13's first call: scripts/gpu-check on branch next/all13 (0aacd04 = next/all rebased on main 735c867 + decode GEMV round trips + review fixes + the MoE combine in the next GEMV + attention combine round trips: every GPU test with poisoned memory,
# the CUDA case checks, the benchmarks and the torch peer, comparable with 65d6362's run), then next/all's Auto
# against main's in the same lease at a few M, then path thresholds while time is left.
# Carry: .carry/first12.tar.xz (lib/, main/moe) .carry/all13-gpu.tar.xz (bin/ + lib/ of next/all) .carry/all-gc.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
mkdir -p /tmp/c /tmp/all /tmp/gc && tar -C /tmp/c -xJf .carry/first12.tar.xz && tar -C /tmp/all -xJf ${ALL_ARCHIVE:-.carry/all13-gpu.tar.xz}
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/all/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
GPU_CHECK_NO_TP=1 GPU_CHECK_NO_EXPERIMENTS=1 MOE_BIN=/tmp/all/bin OUT=/tmp/gc timeout 330 scripts/gpu-check > /tmp/gc/gc.log 2>&1
echo "gpu-check rc $? t=$(el)"; grep -E "^\[  FAILED|differ|not the first" /tmp/gc/gpu-tests.log | head -20; tail -30 /tmp/gc/gc.log
AB_M=1,64,256,4096 AB_SHAPES=qwen3-30b-a3b,deepseek-v3-tp8 AB_FORMATS=fp8_block AB_MODEL=1 timeout 210 \
  scripts/ab-moe-bench /tmp/c/main/moe /tmp/all/bin/moe 1 > /tmp/gc/ab-main.log 2>&1; echo "ab t=$(el)"; tail -10 /tmp/gc/ab-main.log
# The MoE combine inside the next q/k/v GEMV (next/combine-in-norm) against the combine kernel, same binary.
printf '#!/bin/sh\nMOE_COMBINE_IN_NORM=0 exec /tmp/all/bin/moe "$@"\n' > /tmp/all/nocomb; chmod +x /tmp/all/nocomb
AB_M=1 AB_SHAPES=qwen3-30b-a3b AB_FORMATS=fp8_block AB_MODEL=1 timeout 120 \
  scripts/ab-moe-bench /tmp/all/nocomb /tmp/all/bin/moe 1 > /tmp/gc/ab-nocomb.log 2>&1; echo "nocomb t=$(el)"; tail -4 /tmp/gc/ab-nocomb.log
if [ $(el) -lt 440 ]; then
  PT_SHAPES=qwen3-30b-a3b,deepseek-v3-tp8 PT_FORMATS=fp8_block PT_M=1,4,8,16,64,128,256,512 PT_PATHS=mma,swap-ab \
    timeout $(( 575 - $(el) )) scripts/path-thresholds /tmp/all/bin/moe > /tmp/gc/thresholds.log 2>&1; echo "thresholds t=$(el)"
  grep -v "^path-thr" /tmp/gc/thresholds.log
fi
rm -rf /tmp/gc/cases /tmp/gc/fixtures; tar -C /tmp -czf $OUT/gc.tgz gc
