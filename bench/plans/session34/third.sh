#!/usr/bin/env bash
# Session 34, third call. Carry: .carry/s34a-gpu.tar.xz (main at ccb6c58) and .carry/queue_latency_probe
# (bench/probes/queue_latency_probe.cu, built here). The second call's early stage-2 steps (cp.async before
# the wait) made stage 2 reach its wait later, as every extra request form before it did: the question is
# whether an SM's own weight requests delay its latency-critical L2 hits, and whether bulk copies (TMA) do so
# less than register loads or cp.async. On an H200 also the read sweep and the quick gpu-check (the H200
# column is session 32's).
set -uo pipefail
export END=${END:-540}
source bench/plans/lib/gpu-env.sh
rm -rf "${R:?}"/* && record_gpu $R/gpu.txt
queue_probe .carry/queue_latency_probe
pack
if grep -q H200 $R/gpu.txt; then
  unpack_carry .carry/s34a-gpu.tar.xz /tmp/n
  M=/tmp/n/bin/moe
  read_sweep $M
  pack
  quick_gpu_check /tmp/n/bin 60
  pack
  PT_SHAPES=qwen3-30b-a3b PT_FORMATS=fp8_block PT_M=48,64,96,128,192,256 \
    timeout "$(cap 100 20)" scripts/path-thresholds $M > $R/paths.log 2>&1
  cat $R/paths.log
  pack
fi
echo "done t=$(el)"
