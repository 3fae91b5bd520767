#!/usr/bin/env bash
# Session 13's first call: branch next/all (main + wgmma-swap + grouping-multiblock + prologue-quant +
# wgmma-tma-a + wgmma-hquant, all untested on a GPU). Its GPU tests, then Auto against main, then path thresholds.
# Carry: .carry/first12.tar.xz (lib/, main/moe) .carry/all13-gpu.tar.xz (bin/: moe + GPU tests) .carry/all.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
mkdir -p /tmp/c /tmp/all && tar -C /tmp/c -xJf .carry/first12.tar.xz && tar -C /tmp/all -xJf ${ALL_ARCHIVE:-.carry/all13-gpu.tar.xz}
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/c/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
R=/tmp/r13; mkdir -p $R; A=/tmp/all/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/gpu.txt
timeout 180 $A/cuda_forced_paths_test --gtest_color=no > $R/forced.log 2>&1; rc=$?; echo "forced rc=$rc t=$(el)"
grep -E "^\[ +(FAILED|PASSED)|Failure|differ" $R/forced.log | head -20
if [ $rc -ne 0 ]; then  # the untested TMA A rows first suspect: the rest of the call without them
  export MOE_WGMMA_TMA_A=0
  timeout 180 $A/cuda_forced_paths_test --gtest_color=no > $R/forced-notma.log 2>&1; echo "forced without TMA A rc=$? t=$(el)"
  grep -E "^\[ +(FAILED|PASSED)|Failure|differ" $R/forced-notma.log | head -20
fi
timeout 150 $A/cuda_fused_moe_test --gtest_color=no > $R/fused.log 2>&1; echo "fused rc=$? t=$(el)"
grep -E "^\[ +(FAILED|PASSED)|Failure" $R/fused.log | head -10
AB_M=1,8,16,64,256,1024,4096 AB_SHAPES=qwen3-30b-a3b AB_FORMATS=fp8_block,bf16 AB_MODEL=0 timeout 240 \
  scripts/ab-moe-bench /tmp/c/main/moe $A/moe 1 > $R/ab.log 2>&1; echo "ab t=$(el)"; tail -16 $R/ab.log
if [ $(el) -lt 420 ]; then
  PT_SHAPES=qwen3-30b-a3b,deepseek-v3-tp8 PT_FORMATS=fp8_block PT_M=16,64,128,256,512 PT_PATHS=mma,swap-ab \
    timeout $(( 560 - $(el) )) scripts/path-thresholds $A/moe > $R/thresholds.log 2>&1; echo "thresholds t=$(el)"
  grep -v "^path-thr" $R/thresholds.log
fi
tar -C /tmp -czf $OUT/r13.tgz r13
