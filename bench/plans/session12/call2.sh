#!/usr/bin/env bash
# The next GPU session's third call (issue 4, M=4096), if device time is left: the wgmma GEMM's ablations (main +
# ablation switches, measuring build) and ncu's sections for it at M=4096, then next/all13 with its TMA A rows
# and its fused h quantisation switched off, against itself. Budgeted: every step's timeout from the time left
# (the call ends by 570 s; the final tar packs /tmp/ab and /tmp/ng as they are).
# Carry: .carry/first12.tar.xz .carry/all13-gpu.tar.xz .carry/ablate-moe.xz .carry/ablate.sh .carry/ncu-gemm.sh .carry/call2.sh
set -uo pipefail
start=$(date +%s); el() { echo $(( $(date +%s) - start )); }
END=570; cap() { local left=$(( END - $(el) - ${2:-0} )); [ $left -lt $1 ] && echo $left || echo $1; }
mkdir -p /tmp/ab /tmp/ng
timeout $(cap 300 200) bash .carry/ablate.sh 2>&1 | tail -25; echo "ablate t=$(el)"
timeout $(cap 240 60) bash .carry/ncu-gemm.sh 2>&1 | tail -60; echo "ncu t=$(el)"
mkdir -p /tmp/all && { [ -d /tmp/all/bin ] || tar -C /tmp/all -xJf ${ALL_ARCHIVE:-.carry/all13-gpu.tar.xz}; }
cublas=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/all/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}
printf '#!/bin/sh\nMOE_WGMMA_TMA_A=0 exec /tmp/all/bin/moe "$@"\n' > /tmp/all/notma; chmod +x /tmp/all/notma
printf '#!/bin/sh\nMOE_WGMMA_QUANT_H=0 exec /tmp/all/bin/moe "$@"\n' > /tmp/all/nohq; chmod +x /tmp/all/nohq
for v in notma nohq; do
  if [ $(cap 999) -gt 60 ]; then
    AB_M=1024,4096 AB_SHAPES=qwen3-30b-a3b AB_FORMATS=fp8_block AB_MODEL=0 timeout $(cap 999) \
      scripts/ab-moe-bench /tmp/all/$v /tmp/all/bin/moe 1 > /tmp/ab/all-vs-$v.log 2>&1; echo "== old: $v"; tail -3 /tmp/ab/all-vs-$v.log
  fi
done
tar -C /tmp -czf $OUT/call2.tgz ab ng 2>/dev/null; echo "t=$(el)"
